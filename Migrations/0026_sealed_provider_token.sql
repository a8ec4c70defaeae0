-- The fleet's APNs provider token is a bearer secret: it is kept sealed (AES-256-GCM under a key derived
-- from the APNs signing key, which every process that presents the token holds), never in plain text.
-- `jwt_hash` (HMAC-SHA256 under the same derived key) is what a compare-and-set compares. A token stored in
-- plain text before is dropped: the next process that needs one mints it, and the fleet adopts that one.
DELETE FROM apns_provider_tokens;
ALTER TABLE apns_provider_tokens DROP COLUMN jwt;
ALTER TABLE apns_provider_tokens ADD COLUMN sealed_jwt text NOT NULL;
ALTER TABLE apns_provider_tokens ADD COLUMN jwt_hash text NOT NULL;
