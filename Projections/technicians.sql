-- The statement that maintains the technicians read model (GET /v1/technicians), in batches: one row per
-- visit, arrays in parameter order, written in the same transaction as the visit's events and `visits` row
-- (after the events: it reads them). `{table}` is `technician_visits`, or the shadow table while
-- `livevisits replay technicians` rebuilds it.
-- A row holds the visit's technician (as its latest booking or reassignment named them), its status, its
-- current arrival window (the day it belongs to) and distance; `assigned_position` is the global position of
-- that booking or reassignment, so that a technician's name, avatar and van are those of the latest event that
-- named them. A row only ever moves forward: an older version never overwrites a newer one.
-- Only the events this write adds are looked at (those after the row's version): a booking or reassignment
-- among them names the technician, otherwise the row's position stands. (Walking back from the new version to
-- the booking read every progress of the visit, one more at each write: a visit's day cost the square of its
-- events.) A visit without a row yet is looked up from its first event.
INSERT INTO {table} AS t (visit_id, technician_id, technician_name, avatar_symbol, van_description, assigned_position,
                          status, window_start, window_end, kilometres_away, version)
SELECT x.visit_id, x.technician_id, x.technician_name, x.avatar_symbol, x.van_description,
       COALESCE((SELECT e.global_position FROM events e
                 WHERE e.stream_name = 'visit-' || x.visit_id AND e.position <= x.version
                   AND e.position > COALESCE(o.version, 0) AND e.type IN ('scheduled', 'reassigned')
                 ORDER BY e.position DESC LIMIT 1), o.assigned_position, 0),
       x.status, x.window_start, x.window_end, x.kilometres_away, x.version
FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::bigint[], $8::bigint[],
            $9::double precision[], $10::bigint[])
     AS x(visit_id, technician_id, technician_name, avatar_symbol, van_description, status, window_start, window_end,
          kilometres_away, version)
LEFT JOIN {table} o ON o.visit_id = x.visit_id
ON CONFLICT (visit_id) DO UPDATE SET
    technician_id = excluded.technician_id, technician_name = excluded.technician_name,
    avatar_symbol = excluded.avatar_symbol, van_description = excluded.van_description,
    assigned_position = excluded.assigned_position, status = excluded.status, window_start = excluded.window_start,
    window_end = excluded.window_end, kilometres_away = excluded.kilometres_away, version = excluded.version
WHERE t.version <= excluded.version
