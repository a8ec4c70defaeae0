-- The event store keeps no idempotency keys of its own: nothing ever wrote event_idempotency in the product
-- (a retried HTTP request is recognised by http_idempotency, which keeps the first answer). One layer stays.
DROP TABLE IF EXISTS event_idempotency;
