-- API keys: only a SHA-256 of the secret is kept; the key is shown once when minted.
CREATE TABLE api_keys (
    key_id      text        PRIMARY KEY,
    secret_hash text        NOT NULL,
    role        text        NOT NULL CHECK (role IN ('dispatcher', 'technician', 'customer', 'ops')),
    subject     text,
    created_by  text,
    created_at  timestamptz NOT NULL DEFAULT now(),
    revoked_at  timestamptz
);

-- Idempotent HTTP answers, scoped to the calling key and the route; kept at least 24 hours.
CREATE TABLE http_idempotency (
    key_id          text        NOT NULL,
    route           text        NOT NULL,
    idempotency_key text        NOT NULL,
    request_body    text        NOT NULL,
    status          integer,
    response_body   text,
    response_etag   text,
    created_at      timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (key_id, route, idempotency_key)
);
CREATE INDEX http_idempotency_age ON http_idempotency (created_at);
