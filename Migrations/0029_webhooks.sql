-- Webhooks: what happened to a visit, POSTed to the operator's dispatch system. A row of `webhooks` is one
-- POST, written by the triggers below in the transaction of what it reports (an appended event, a delivery
-- reaching `sent`, `dead` or `expired`, a Live Activity's ledger state changing), so nothing reported is lost
-- and nothing is reported that did not commit. Webhook rows cause no webhooks.
--
-- The triggers write only while `webhook_settings.enabled` is true: every `serve`/`worker` process sets it at
-- start from LIVEVISITS_WEBHOOK_URL / LIVEVISITS_WEBHOOK_SECRET (a fleet shares one configuration).
--
-- A visit's webhooks go out one at a time in `id` order: a row is claimed only when no earlier row of its
-- visit is still open (pending, or sending under a lease) and no later one is on the wire.
-- state: pending → sending → sent | dead (a non-2xx answer past 24 hours); `retry` requeues a dead one.
--
-- `id` comes from the deliveries' sequence, so the operators' outbox lists both under one numbering and
-- `POST /v1/ops/outbox/{id}/retry` finds either. `webhook_id` is the body's `id`, the same on every retry.
-- A `visit.event` row keeps only its event's global position: the body's `data` is the history entry, read
-- (and its personal fields opened) at send time, so no plain personal data rests here.

CREATE TABLE webhook_settings (
    only_row boolean PRIMARY KEY DEFAULT true CHECK (only_row),
    enabled  boolean NOT NULL DEFAULT false
);
INSERT INTO webhook_settings DEFAULT VALUES;

CREATE TABLE webhooks (
    id                   bigint  PRIMARY KEY DEFAULT nextval('deliveries_id_seq'),
    webhook_id           uuid    NOT NULL DEFAULT gen_random_uuid(),
    visit_id             text    NOT NULL,
    type                 text    NOT NULL,
    occurred_at          bigint  NOT NULL,
    -- visit.event: the event (its history entry is the body's data); else the data as written.
    event_position       bigint,
    data                 text,
    created_at           double precision NOT NULL,
    state                text    NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'sending', 'sent', 'dead')),
    -- Pending: when it may go (now, or its backoff). Sending: when its lease runs out (then another worker
    -- may take it).
    next_attempt_at      double precision NOT NULL,
    attempts             integer NOT NULL DEFAULT 0,
    finished_at          double precision,
    last_status          integer,
    last_reason          text,
    last_latency_seconds double precision,
    CHECK ((type = 'visit.event') = (event_position IS NOT NULL))
);

-- The claim: open rows by due time; the per-visit order: open rows by visit.
CREATE INDEX webhooks_due ON webhooks (next_attempt_at, id) WHERE state IN ('pending', 'sending');
CREATE INDEX webhooks_open_by_visit ON webhooks (visit_id, id) WHERE state IN ('pending', 'sending');
-- Retention: finished rows by age.
CREATE INDEX webhooks_finished_age ON webhooks (finished_at) WHERE state IN ('sent', 'dead');

-- Every appended event of a visit stream: one statement per appending statement (a batch of commands
-- appends many events at once), in the events' order.
CREATE FUNCTION livevisits_webhooks_for_events() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF (SELECT enabled FROM webhook_settings) THEN
        INSERT INTO webhooks (visit_id, type, occurred_at, event_position, created_at, next_attempt_at)
        SELECT substr(e.stream_name, 7), 'visit.event', floor(extract(epoch FROM e.recorded_at))::bigint,
               e.global_position, extract(epoch FROM statement_timestamp()), extract(epoch FROM statement_timestamp())
        FROM appended e
        WHERE e.stream_name LIKE 'visit-%'
        ORDER BY e.global_position;
    END IF;
    RETURN NULL;
END
$$;

CREATE TRIGGER events_webhooks AFTER INSERT ON events
    REFERENCING NEW TABLE AS appended
    FOR EACH STATEMENT EXECUTE FUNCTION livevisits_webhooks_for_events();

-- Deliveries reaching a final state worth reporting; a push-to-start device's acknowledged start also makes
-- its ledger entry `starting`. One statement per updating statement (a worker completes a batch of 500 in one),
-- from its transition tables: a trigger per row cost a third of the outbox's drain.
CREATE FUNCTION livevisits_webhooks_for_deliveries() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    at double precision := extract(epoch FROM statement_timestamp());
BEGIN
    IF (SELECT enabled FROM webhook_settings) THEN
        INSERT INTO webhooks (visit_id, type, occurred_at, data, created_at, next_attempt_at)
        SELECT f.visit_id, f.type, floor(COALESCE(f.finished_at, at))::bigint, f.data, at, at
        FROM (
            SELECT n.id, 0 AS part, n.visit_id, 'delivery.' || n.state AS type, n.finished_at,
                   json_build_object('deliveryId', n.id, 'kind', n.kind, 'activityId', n.activity_id,
                                     'deviceId', n.device_id, 'channelId', n.channel_id, 'apnsId', n.apns_id,
                                     'apnsUniqueId', n.apns_unique_id, 'attempts', n.attempts,
                                     'lastStatus', n.last_status, 'lastReason', n.last_reason)::text AS data
            FROM updated_new n JOIN updated_old o ON o.id = n.id
            WHERE n.state IN ('sent', 'dead', 'expired') AND o.state IS DISTINCT FROM n.state
            UNION ALL
            SELECT n.id, 1, n.visit_id, 'liveActivity.starting', n.finished_at,
                   json_build_object('activityId', NULL, 'deviceId', n.device_id, 'state', 'starting',
                                     'previousState', NULL)::text
            FROM updated_new n JOIN updated_old o ON o.id = n.id
            WHERE n.kind = 'start' AND n.state = 'sent' AND o.state IS DISTINCT FROM n.state AND n.device_id IS NOT NULL
        ) f
        ORDER BY f.id, f.part;
    END IF;
    RETURN NULL;
END
$$;

CREATE TRIGGER deliveries_webhooks AFTER UPDATE ON deliveries
    REFERENCING OLD TABLE AS updated_old NEW TABLE AS updated_new
    FOR EACH STATEMENT EXECUTE FUNCTION livevisits_webhooks_for_deliveries();

-- A Live Activity's ledger state as a row of live_activities shows it (the inferred `stale` of a passed stale
-- date is no row change and is not reported).
CREATE FUNCTION livevisits_activity_state(retired_at_ms bigint, retired_reason text, reported_state text)
RETURNS text LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE
        WHEN retired_at_ms IS NULL THEN COALESCE(reported_state, 'active')
        WHEN retired_reason IN ('dismissed', 'lapsed', 'renewed', 'replaced') THEN retired_reason
        ELSE 'ended' END
$$;

CREATE FUNCTION livevisits_webhooks_for_activity() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    at double precision := extract(epoch FROM statement_timestamp());
    state text := livevisits_activity_state(NEW.retired_at_ms, NEW.retired_reason, NEW.reported_state);
    previous text;
BEGIN
    IF TG_OP = 'UPDATE' THEN
        previous := livevisits_activity_state(OLD.retired_at_ms, OLD.retired_reason, OLD.reported_state);
        IF previous = state THEN RETURN NULL; END IF;
    END IF;
    IF (SELECT enabled FROM webhook_settings) THEN
        INSERT INTO webhooks (visit_id, type, occurred_at, data, created_at, next_attempt_at)
        VALUES (NEW.visit_id, 'liveActivity.' || state, floor(at)::bigint,
                json_build_object('activityId', NEW.activity_id, 'deviceId', NEW.device_id,
                                  'environment', NEW.environment, 'origin', NEW.origin, 'state', state,
                                  'previousState', previous)::text,
                at, at);
    END IF;
    RETURN NULL;
END
$$;

CREATE TRIGGER live_activities_webhooks_insert AFTER INSERT ON live_activities
    FOR EACH ROW EXECUTE FUNCTION livevisits_webhooks_for_activity();
CREATE TRIGGER live_activities_webhooks_update AFTER UPDATE ON live_activities
    FOR EACH ROW
    WHEN (OLD.retired_at_ms IS DISTINCT FROM NEW.retired_at_ms OR OLD.retired_reason IS DISTINCT FROM NEW.retired_reason
          OR OLD.reported_state IS DISTINCT FROM NEW.reported_state)
    EXECUTE FUNCTION livevisits_webhooks_for_activity();
