-- Issue 19, PostgreSQL CPU per delivered push: the attempt that APNs acknowledged (the one that made the
-- delivery `sent`) is no longer a `delivery_attempts` row. That insert, its primary-key entry and its
-- foreign-key check (which locks the delivery row) were a large share of a push's database cost. The
-- delivery row, updated by the same statement anyway, keeps what the attempt row held: these columns,
-- with `last_status` and `last_reason` (already there) for its status and reason. Failed attempts stay
-- rows. `OutboxStore.attempts(deliveryId:)` answers a `sent` delivery's acknowledged attempt from here
-- when no row holds it. Every recorded attempt sets them, failed or not; NULL until the first one, and on
-- deliveries finished before this migration (whose attempts are all rows).

-- The number of the attempt these columns describe (`delivery_attempts.attempt`). Not always `attempts`:
-- a start found delivered without a send of its own (contract §9, unknown outcome) counts a claim too.
ALTER TABLE deliveries ADD COLUMN last_attempt integer;
-- When that attempt's send started (epoch seconds, the worker's clock): `delivery_attempts.attempted_at`.
ALTER TABLE deliveries ADD COLUMN last_attempted_at double precision;
-- How long it took, send to answer or to giving up (seconds): `delivery_attempts.latency_seconds`.
ALTER TABLE deliveries ADD COLUMN last_latency_seconds double precision;
