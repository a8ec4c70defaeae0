-- Contract §7: broadcast channels (iOS 18). One channel per visit and APNs environment; its broadcasts
-- are deliveries like any other, to the target `channel["<visit>","<environment>"]`, and the claim reads
-- the channel's id here as it reads a token from live_activities.
--
-- state: creating (a PUT claimed the creation and is calling APNs: channel_id is NULL, and no other
-- request or reconciliation touches it) → active (APNs answered the id) → ended (the end broadcast was
-- acknowledged; deleted at APNs at next_delete_at) → deleting (a worker is deleting it, or retries with
-- backoff). A channel APNs no longer knows (BadChannelId, ChannelNotRegistered) or that was deleted is
-- removed from the table: the visit lists it no more, and a later PUT creates a new one.
CREATE TABLE channels (
    visit_id          text    NOT NULL,
    environment       text    NOT NULL CHECK (environment IN ('sandbox', 'production')),
    customer_id       text    NOT NULL,
    target            text    NOT NULL UNIQUE,
    channel_id        text    UNIQUE,
    state             text    NOT NULL CHECK (state IN ('creating', 'active', 'ended', 'deleting')),
    -- When the creation was claimed (a creation claimed too long ago without an id was abandoned).
    claimed_at        double precision NOT NULL,
    created_at        double precision,
    ended_at          double precision,
    next_delete_at    double precision,
    delete_attempts   integer NOT NULL DEFAULT 0,
    last_error        text,
    PRIMARY KEY (visit_id, environment),
    CHECK ((state = 'creating') = (channel_id IS NULL))
);

-- The deletion pass: channels due for deletion (or a retry of it).
CREATE INDEX channels_delete_due ON channels (next_delete_at) WHERE state IN ('ended', 'deleting');
-- The fleet's count per environment (LIVEVISITS_MAX_CHANNELS) and the metrics.
CREATE INDEX channels_by_environment ON channels (environment, state);

-- Reconciliation with APNs (`livevisits channels reconcile`, every worker every 10 minutes): one pass at a
-- time per environment across the fleet, held as a lease (a pass waits on APNs, so no connection or
-- advisory lock is held meanwhile); `finished_at` lets the other workers skip a pass done recently.
CREATE TABLE channel_reconciliations (
    environment   text PRIMARY KEY CHECK (environment IN ('sandbox', 'production')),
    held_until    double precision NOT NULL,
    finished_at   double precision
);
