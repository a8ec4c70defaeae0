-- The APNs provider token (JWT) the whole fleet presents, one row per signing key. Processes adopt a
-- fresh token found here instead of minting their own, and replace it by compare-and-set, so every
-- serve/worker process on one database presents the same token and Apple sees one refresh schedule.
CREATE TABLE apns_provider_tokens (
    team_id    text        NOT NULL,
    key_id     text        NOT NULL,
    jwt        text        NOT NULL,
    issued_at  bigint      NOT NULL,
    updated_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (team_id, key_id)
);
