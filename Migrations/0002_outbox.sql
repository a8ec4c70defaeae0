-- The outbox: push tokens, device preferences, and one delivery row per push and target.
-- Times the worker compares (due, lease, expiry) are epoch seconds (double precision) taken from the
-- application's clock, so tests can drive them; registration times are epoch milliseconds because
-- APNs's 410 `timestamp` is in milliseconds.

-- The update token of one Live Activity (a visit may be followed on several devices).
CREATE TABLE live_activities (
    visit_id           text    NOT NULL,
    activity_id        text    NOT NULL,
    device_id          text,
    push_token         text    NOT NULL,
    environment        text    NOT NULL CHECK (environment IN ('sandbox', 'production')),
    registered_at_ms   bigint  NOT NULL,
    retired_at_ms      bigint,
    retired_reason     text,
    PRIMARY KEY (visit_id, activity_id)
);

-- A customer's push-to-start token, one per device.
CREATE TABLE push_to_start_tokens (
    customer_id        text    NOT NULL,
    device_id          text    NOT NULL,
    push_token         text    NOT NULL,
    environment        text    NOT NULL CHECK (environment IN ('sandbox', 'production')),
    registered_at_ms   bigint  NOT NULL,
    retired_at_ms      bigint,
    retired_reason     text,
    PRIMARY KEY (customer_id, device_id)
);

-- What the app reads from ActivityAuthorizationInfo. No row means enabled.
CREATE TABLE device_preferences (
    customer_id               text    NOT NULL,
    device_id                 text    NOT NULL,
    live_activities_enabled   boolean NOT NULL,
    frequent_pushes_enabled   boolean NOT NULL,
    updated_at_ms             bigint  NOT NULL,
    PRIMARY KEY (customer_id, device_id)
);

-- One push to one target. `target` names it: `activity:<visit>/<activity>` or
-- `start:<visit>/<customer>/<device>`; the token is looked up at send time.
-- state: pending → sending → sent | dead | expired | superseded | cancelled (token retired, forgotten,
-- Live Activities switched off, visit ended before its start went out).
CREATE TABLE deliveries (
    id                     bigint  GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    apns_id                uuid    NOT NULL,
    target                 text    NOT NULL,
    visit_id               text    NOT NULL,
    customer_id            text    NOT NULL,
    activity_id            text,
    device_id              text,
    kind                   text    NOT NULL CHECK (kind IN ('start', 'update', 'end')),
    priority               integer NOT NULL CHECK (priority IN (5, 10)),
    aps_timestamp          bigint  NOT NULL,
    body                   text    NOT NULL,
    -- apns-expiration: the stale date for updates; start/end expire this long after sending.
    stale_date             bigint,
    expires_after_sending  bigint,
    visit_version          bigint  NOT NULL,
    event_recorded_at      double precision NOT NULL,
    created_at             double precision NOT NULL,
    state                  text    NOT NULL DEFAULT 'pending'
                           CHECK (state IN ('pending', 'sending', 'sent', 'dead', 'expired', 'superseded', 'cancelled')),
    next_attempt_at        double precision NOT NULL,
    attempts               integer NOT NULL DEFAULT 0,
    lease_token            uuid,
    lease_expires_at       double precision,
    claimed_at             double precision,
    -- A start whose send may or may not have reached APNs (lease lost mid-send, timeout).
    outcome_unknown_since  double precision,
    last_status            integer,
    last_reason            text,
    finished_at            double precision,
    superseded_by          bigint
);

-- Few, mostly partial indexes: a delivery changes state two or three times and every index on a changed
-- row is written again, so rows that reached a final state sit only in the primary key (and, for starts
-- and ends, in the one index that keeps "nothing after an end, one start per device" cheap).
CREATE INDEX deliveries_due ON deliveries (next_attempt_at, id) WHERE state = 'pending';
CREATE INDEX deliveries_leased ON deliveries (lease_token) WHERE state = 'sending';
CREATE INDEX deliveries_lease_expiry ON deliveries (lease_expires_at) WHERE state = 'sending';
CREATE INDEX deliveries_open_by_target ON deliveries (target, aps_timestamp) WHERE state IN ('pending', 'sending');
CREATE INDEX deliveries_open_by_device ON deliveries (customer_id, device_id) WHERE state = 'pending';
CREATE INDEX deliveries_starts_and_ends ON deliveries (target) WHERE kind IN ('start', 'end');
CREATE INDEX deliveries_pending_starts ON deliveries (visit_id) WHERE kind = 'start' AND state = 'pending';

-- Every attempt: when, what APNs said (or why there was no answer), how long it took.
CREATE TABLE delivery_attempts (
    delivery_id      bigint  NOT NULL REFERENCES deliveries (id) ON DELETE CASCADE,
    attempt          integer NOT NULL,
    attempted_at     double precision NOT NULL,
    status           integer,
    reason           text,
    latency_seconds  double precision,
    -- The backoff chosen after this attempt (the next one is not due before answer + this).
    retry_after_seconds double precision,
    PRIMARY KEY (delivery_id, attempt)
);

-- The newest aps.timestamp each target has acknowledged: nothing older is sent after it.
CREATE TABLE delivery_targets (
    target               text    PRIMARY KEY,
    last_sent_timestamp  bigint  NOT NULL
);
