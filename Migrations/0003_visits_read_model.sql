-- The visit read model: one row per visit, written in the same transaction as the visit's events
-- (see Projections/visits.sql for the statement that maintains it, and `livevisits replay visits`).

CREATE TABLE visits (
    visit_id      text        PRIMARY KEY,
    customer_id   text        NOT NULL,
    technician_id text        NOT NULL,
    status        text        NOT NULL,
    ended         boolean     NOT NULL,
    version       bigint      NOT NULL,
    scheduled_at  bigint      NOT NULL,  -- epoch seconds of the scheduled event (list order)
    view          text        NOT NULL,  -- the GET /v1/visits/{id} body as served, less liveActivities
    state         jsonb       NOT NULL,  -- the folded VisitState snapshot
    updated_at    timestamptz NOT NULL DEFAULT now()
);

CREATE INDEX visits_by_customer ON visits (customer_id, scheduled_at DESC, visit_id DESC);
CREATE INDEX visits_by_technician ON visits (technician_id, scheduled_at DESC, visit_id DESC);
CREATE INDEX visits_by_schedule ON visits (scheduled_at DESC, visit_id DESC);
