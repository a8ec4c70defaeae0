-- Contract §10: customers' personal data sealed under per-customer keys, and retention.

-- One data key per customer (AES-256). `data_key` is base64url: the key wrapped by the key file
-- `wrapping_key_id` names (AES-256-GCM, nonce | ciphertext | tag), or the raw key when that is null (no
-- LIVEVISITS_PERSONAL_DATA_KEY_FILE). While a rotation runs, `previous_*` keeps the old wrap so processes
-- that still hold the old file read on. Erasure deletes the row: every value sealed under `key_id` is then
-- unreadable, in the events, the read model, the outbox, stored answers and every backup.
CREATE TABLE personal_data_keys (
    key_id                    text        PRIMARY KEY,
    customer_id               text        NOT NULL UNIQUE,
    data_key                  text        NOT NULL,
    wrapping_key_id           text,
    previous_data_key         text,
    previous_wrapping_key_id  text,
    created_at                timestamptz NOT NULL DEFAULT now()
);

-- Retention batches (Docs/operations.md, "Retention"): each finds its oldest rows through an index on
-- the age it compares, so a batch reads about the rows it deletes whatever the table's size.
-- Finished deliveries only (partial): a row gets its entry once, when it reaches a final state.
CREATE INDEX deliveries_finished_age ON deliveries (finished_at)
    WHERE state IN ('sent', 'dead', 'expired', 'superseded', 'cancelled');
-- Retired tokens only (partial): live tokens never enter it.
CREATE INDEX live_activities_retired_age ON live_activities (retired_at_ms) WHERE retired_at_ms IS NOT NULL;
CREATE INDEX push_to_start_tokens_retired_age ON push_to_start_tokens (retired_at_ms) WHERE retired_at_ms IS NOT NULL;
CREATE INDEX notification_tokens_retired_age ON notification_tokens (retired_at_ms) WHERE retired_at_ms IS NOT NULL;
-- (http_idempotency already has http_idempotency_age on created_at; delivery_attempts are found by their
-- primary key's leading delivery_id.)

-- The request body kept under an Idempotency-Key becomes its SHA-256 (the bodies of POST /v1/visits hold
-- personal data in plain text). Rows already there are hashed the same way the API compares them.
UPDATE http_idempotency SET request_body = 'sha256:' || encode(sha256(convert_to(request_body, 'UTF8')), 'hex')
WHERE request_body NOT LIKE 'sha256:%';
