-- Contract §8 (cadence) enforced where a push leaves: the claim holds back a paced update whose target's
-- last paced send is younger than the interval, and moves it to when the interval ends. This index keeps
-- that look at the due paced updates alone, never the whole due backlog.
CREATE INDEX deliveries_paced_due ON deliveries (next_attempt_at) WHERE state = 'pending' AND paced_seconds IS NOT NULL;
