-- Contract §8, the push budget and the progress cadence, kept in the database so every worker on it
-- shares one count.

-- The `apns-priority` a delivery's last attempt went with: its planned priority, or 5 when the target had
-- spent its priority-10 allowance for the hour (a downgrade). NULL until it was attempted.
ALTER TABLE deliveries ADD COLUMN sent_priority integer CHECK (sent_priority IN (5, 10));

-- Updates caused by `progress` reach a target at most once per this many seconds (NULL: not paced).
ALTER TABLE deliveries ADD COLUMN paced_seconds double precision;

-- The budget's count: a target's priority-10 pushes acknowledged in the last hour, one index probe per
-- claimed priority-10 update. Only acknowledged priority-10 rows are in it.
CREATE INDEX deliveries_priority10_sent ON deliveries (target, finished_at) WHERE state = 'sent' AND sent_priority = 10;

-- When the target's last paced (progress) update was claimed for the send that APNs acknowledged.
ALTER TABLE delivery_targets ADD COLUMN last_paced_at double precision;
