-- Tracking links: a page for customers without the app (GET /track/<token>). A visit has at most one link; a
-- new one replaces it, so the old URL stops working. Only the SHA-256 of the token is kept (lower-case hex):
-- a dump of the database cannot be turned into a working URL.
CREATE TABLE tracking_links (
    visit_id   text             PRIMARY KEY,
    token_hash text             NOT NULL UNIQUE,
    created_at double precision NOT NULL  -- epoch seconds
);
