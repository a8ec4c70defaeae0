-- The event store: one append-only log of every fact, in streams (one per visit).
-- Vocabulary after message-db: stream_name, position (version in the stream, from 1), global_position.

CREATE TABLE events (
    global_position bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    stream_name     text        NOT NULL,
    position        bigint      NOT NULL CHECK (position >= 1),
    type            text        NOT NULL,
    data            jsonb       NOT NULL,
    metadata        jsonb       NOT NULL DEFAULT '{}',
    -- The writing transaction. Followers read only below the oldest running transaction
    -- (pg_snapshot_xmin of the current snapshot) in (transaction_id, global_position) order,
    -- so an event whose transaction commits late is never skipped.
    transaction_id  xid8        NOT NULL DEFAULT pg_current_xact_id(),
    recorded_at     timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT events_stream_position UNIQUE (stream_name, position)
);

CREATE INDEX events_follow_order ON events (transaction_id, global_position);

-- Idempotent appends: a key maps to the result of the append that first used it.
CREATE TABLE event_idempotency (
    idempotency_key  text        PRIMARY KEY,
    stream_name      text        NOT NULL,
    first_position   bigint      NOT NULL,
    last_position    bigint      NOT NULL,
    global_positions bigint[]    NOT NULL,
    recorded_at      timestamptz NOT NULL,
    created_at       timestamptz NOT NULL DEFAULT now()
);

-- Where each asynchronous follower of the log stands, advanced by compare-and-set.
CREATE TABLE projection_checkpoints (
    name            text        PRIMARY KEY,
    transaction_id  xid8        NOT NULL DEFAULT '0',
    global_position bigint      NOT NULL DEFAULT 0,
    updated_at      timestamptz NOT NULL DEFAULT now()
);
