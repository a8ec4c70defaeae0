-- Contract §9: at `activityRenewalSeconds` a still-active visit's Live Activity is renewed (an end with
-- immediate dismissal, then a start to the customer's push-to-start tokens). A worker's periodic pass
-- claims the activities that came due, once each (`renewal_checked_at_ms`, set by one UPDATE … WHERE
-- renewal_checked_at_ms IS NULL, so several workers never renew one twice); an activity renewed is retired
-- with the reason 'renewed' (no longer live for its visit; only its own end still goes to it). The partial
-- index keeps the pass to the activities not yet checked.
ALTER TABLE live_activities ADD COLUMN renewal_checked_at_ms bigint;
CREATE INDEX live_activities_renewal_due ON live_activities (began_at_ms)
    WHERE renewal_checked_at_ms IS NULL AND retired_at_ms IS NULL;
