-- A pause of sending shared by every worker on this database. A configuration error from APNs (bad key,
-- topic, clock; or many DeviceTokenNotForTopic) is the fleet's, not one process's: the worker that meets
-- it writes how long sending pauses, and every worker's claim finds nothing due until then (so the others
-- do not burn their own share of tokens or retries on the same problem). At most one row.
CREATE TABLE outbox_pause (
    singleton      boolean PRIMARY KEY DEFAULT true CHECK (singleton),
    -- Epoch seconds from the workers' clock, like every time the outbox compares.
    paused_until   double precision NOT NULL,
    paused_at      double precision NOT NULL,
    reason         text NOT NULL
);
