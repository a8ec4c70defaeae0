-- The dispatch desk: a display name on API keys, and the technicians' day as a read model.

-- A key may carry a person's display name (free text, shown in a visit's history as `actor.name`).
ALTER TABLE api_keys ADD COLUMN name text;

-- The technicians read model (GET /v1/technicians): one row per visit with what the day by technician shows
-- of it — its technician (as the latest booking or reassignment named them), status, current arrival window
-- and distance — and `assigned_position`, the global position of that booking or reassignment, so that a
-- technician's name, avatar and van are those of the latest event that named them. No personal field.
-- Written in the same transaction as the visit's events and its `visits` row (Projections/technicians.sql),
-- rebuilt from the log by `livevisits replay technicians`.
CREATE TABLE technician_visits (
    visit_id          text             PRIMARY KEY,
    technician_id     text             NOT NULL,
    technician_name   text             NOT NULL,
    avatar_symbol     text             NOT NULL,
    van_description   text             NOT NULL,
    assigned_position bigint           NOT NULL,
    status            text             NOT NULL,
    window_start      bigint           NOT NULL,  -- epoch seconds; the day the visit belongs to
    window_end        bigint           NOT NULL,
    kilometres_away   double precision NOT NULL,
    version           bigint           NOT NULL
);

-- A day's visits: a range of window starts.
CREATE INDEX technician_visits_by_window ON technician_visits (window_start, technician_id);
-- A technician's latest booking or reassignment.
CREATE INDEX technician_visits_by_assignment ON technician_visits (technician_id, assigned_position DESC);

-- The visits booked before this migration, from their folded states (a replay gives the same rows).
INSERT INTO technician_visits (visit_id, technician_id, technician_name, avatar_symbol, van_description,
                               assigned_position, status, window_start, window_end, kilometres_away, version)
SELECT v.visit_id, s.state -> 'technician' ->> 'id', s.state -> 'technician' ->> 'name',
       s.state -> 'technician' ->> 'avatarSymbol', s.state -> 'technician' ->> 'vanDescription',
       COALESCE((SELECT e.global_position FROM events e
                 WHERE e.stream_name = 'visit-' || v.visit_id AND e.position <= v.version
                   AND e.type IN ('scheduled', 'reassigned')
                 ORDER BY e.position DESC LIMIT 1), 0),
       v.status, (s.state -> 'arrivalWindow' ->> 'start')::bigint, (s.state -> 'arrivalWindow' ->> 'end')::bigint,
       (s.state ->> 'kilometresAway')::double precision, v.version
FROM visits v, LATERAL (SELECT v.state::jsonb AS state) s;
