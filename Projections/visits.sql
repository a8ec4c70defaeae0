-- The statement that maintains the visit read model, in batches: one row per visit, arrays in
-- parameter order. `{table}` is `visits`, or the shadow table while `livevisits replay visits` rebuilds it.
-- A row holds the folded state and what the rules gave it (relevance, stale date, dismissal); the view
-- served by GET /v1/visits/{id} is drawn from them when read. `booked` is the global position of the visit's
-- first event (read from the log, written in the same transaction before this statement), set when the row is
-- made and never changed: the lists' order among visits scheduled in the same second.
-- A row only ever moves forward: an older version never overwrites a newer one.
INSERT INTO {table} AS v (visit_id, customer_id, technician_id, status, ended, version, scheduled_at, state,
                          relevance_score, stale_date, dismissal_policy, dismissal_date, updated_at, booked)
SELECT x.visit_id, x.customer_id, x.technician_id, x.status, x.ended, x.version, x.scheduled_at, x.state,
       x.relevance_score, x.stale_date, x.dismissal_policy, x.dismissal_date, now(),
       COALESCE((SELECT e.global_position FROM events e
                 WHERE e.stream_name = 'visit-' || x.visit_id AND e.position = 1), 0)
FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::boolean[], $6::bigint[], $7::bigint[], $8::text[],
            $9::double precision[], $10::bigint[], $11::text[], $12::bigint[])
     AS x(visit_id, customer_id, technician_id, status, ended, version, scheduled_at, state,
          relevance_score, stale_date, dismissal_policy, dismissal_date)
ON CONFLICT (visit_id) DO UPDATE SET
    customer_id = excluded.customer_id, technician_id = excluded.technician_id, status = excluded.status,
    ended = excluded.ended, version = excluded.version, scheduled_at = excluded.scheduled_at, state = excluded.state,
    relevance_score = excluded.relevance_score, stale_date = excluded.stale_date,
    dismissal_policy = excluded.dismissal_policy, dismissal_date = excluded.dismissal_date,
    updated_at = excluded.updated_at
WHERE v.version <= excluded.version
