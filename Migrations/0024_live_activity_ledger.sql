-- The Live Activity ledger: what each customer device shows, as the server knows it. A row of
-- live_activities is one activity of a visit (its update token, its device, when it began); this migration
-- adds what the ledger needs beyond the token:
--
-- origin          how it came to be: the app started it (`app`), a start to a push-to-start token did
--                 (`pushToStart`), or a renewal's start did (`renewal`).
-- reported_state  what the app last reported from activityStateUpdates while it lives (`active`, `stale`);
--                 the app's `ended` and `dismissed` retire it (retired_reason), as do `renewed`,
--                 `replaced` (a newer activity of the visit on the same device) and `lapsed` (not renewed
--                 in time: iOS ended it).
-- renewals        how many renewals came before it in its visit (the visit's cap, `maxRenewals`).
--
-- A retired row is the memory of the device: a device that has or had an activity of the visit gets no
-- other start of it (only a renewal's, unless it dismissed one), and a dismissal withholds its fallback
-- notifications too.
ALTER TABLE live_activities
    ADD COLUMN origin text NOT NULL DEFAULT 'app' CHECK (origin IN ('app', 'pushToStart', 'renewal')),
    ADD COLUMN reported_state text CHECK (reported_state IN ('active', 'stale')),
    ADD COLUMN renewals integer NOT NULL DEFAULT 0;

-- The lapse pass: live activities by when they began (every worker probes it every few seconds).
CREATE INDEX live_activities_live_began ON live_activities (began_at_ms) WHERE retired_at_ms IS NULL;

-- When each target last acknowledged a push: the ledger's `lastAcknowledgedAt`.
ALTER TABLE delivery_targets ADD COLUMN last_sent_at double precision;

-- The starts of a visit by device: which start an activity registering from a device came from, and the
-- ledger's `starting` entries. Start rows only (few beside the updates).
CREATE INDEX deliveries_starts_by_visit ON deliveries (visit_id, device_id) WHERE kind = 'start';
