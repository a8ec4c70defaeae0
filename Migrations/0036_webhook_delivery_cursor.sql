-- Webhooks of final delivery outcomes (`delivery.sent|dead|expired`, and `liveActivity.starting` for an
-- acknowledged start to a device) are no longer written by a trigger in the transaction that completes the
-- pushes: that row per push cost the outbox's drain a fifth of its rate. The completing statement now only
-- stamps the row it updates anyway with its transaction's id (`finished_xid`), and the webhook worker reads
-- the finished deliveries by that stamp, off the push path, turning them into `webhooks` rows in a
-- transaction of its own (WebhookStore.collectDeliveryOutcomes).
--
-- The cursor is (transaction id, delivery id). A reader takes only rows stamped by transactions older than
-- the oldest one still running (`pg_snapshot_xmin` of its snapshot): every such transaction has committed
-- or aborted, so no row below the cursor can still appear, and the cursor moves past each row exactly once,
-- in the same transaction as the webhook rows it makes. A long-running transaction delays these webhooks;
-- it never loses one.

ALTER TABLE deliveries ADD COLUMN finished_xid xid8;

-- Only rows reaching a state that is reported, while webhooks are on, carry a stamp; a requeued row loses it
-- until it finishes again.
CREATE INDEX deliveries_finished_xid ON deliveries (finished_xid, id) WHERE finished_xid IS NOT NULL;

-- Where the reading stands. Moved past every transaction begun so far whenever webhooks are switched on
-- (`pg_snapshot_xmax`), so that switching on reports what finishes from then on, as the trigger did. Transaction
-- ids are the cluster's: a long transaction in another database of the cluster delays these webhooks too.
ALTER TABLE webhook_settings
    ADD COLUMN deliveries_xid xid8 NOT NULL DEFAULT '0',
    ADD COLUMN deliveries_id bigint NOT NULL DEFAULT 0;
UPDATE webhook_settings SET deliveries_xid = pg_snapshot_xmax(pg_current_snapshot());

DROP TRIGGER deliveries_webhooks ON deliveries;
DROP FUNCTION livevisits_webhooks_for_deliveries();
