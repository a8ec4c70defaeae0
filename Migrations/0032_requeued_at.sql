-- An operator's retry (`POST /v1/ops/outbox/{id}/retry`, `livevisits outbox retry`) gives a dead delivery or
-- webhook a fresh maximum age, counted from `requeued_at`; `created_at` keeps when it was first written,
-- which is what the ops page and a visit's deliveries show. Nullable and without a default: adding it
-- rewrites no row.
ALTER TABLE deliveries ADD COLUMN requeued_at double precision;
ALTER TABLE webhooks ADD COLUMN requeued_at double precision;
