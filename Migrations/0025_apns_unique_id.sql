-- Issue 37: a delivery traceable in Apple's Push Notifications Console (`GET /v1/visits/{id}/deliveries`).
--
-- `apns_unique_id`: the `apns-unique-id` header APNs answered the accepted attempt with (APNs sends one in
-- the development environment only); NULL until then, and for every production push.
-- `channel_id`: the broadcast channel a channel delivery was last sent to. The `channels` row that names it
-- is deleted some time after the visit ends; the delivery keeps the id the push went to.
-- Both are written by the statement that completes the attempt (`OutboxStore.complete`), nothing else.
ALTER TABLE deliveries
    ADD COLUMN apns_unique_id uuid,
    ADD COLUMN channel_id     text;
