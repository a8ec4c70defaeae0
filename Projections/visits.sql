-- The statement that maintains the visit read model, in batches: one row per visit, arrays in
-- parameter order. `{table}` is `visits`, or the shadow table while `livevisits replay visits` rebuilds it.
-- A row only ever moves forward: an older version never overwrites a newer one.
INSERT INTO {table} AS v (visit_id, customer_id, technician_id, status, ended, version, scheduled_at, view, state, updated_at)
SELECT x.visit_id, x.customer_id, x.technician_id, x.status, x.ended, x.version, x.scheduled_at, x.view, x.state, now()
FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::boolean[], $6::bigint[], $7::bigint[], $8::text[], $9::text[])
     AS x(visit_id, customer_id, technician_id, status, ended, version, scheduled_at, view, state)
ON CONFLICT (visit_id) DO UPDATE SET
    customer_id = excluded.customer_id, technician_id = excluded.technician_id, status = excluded.status,
    ended = excluded.ended, version = excluded.version, scheduled_at = excluded.scheduled_at,
    view = excluded.view, state = excluded.state, updated_at = excluded.updated_at
WHERE v.version <= excluded.version
