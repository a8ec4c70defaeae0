-- Push tokens are personal data: a registration stores the token sealed under the customer's data key
-- (`push_token` holds its `enc:v1:` text) and beside it `token_hash`, HMAC-SHA256 of the token under that
-- key (hex), which every look-up compares instead of the token: a registration's "same token" check, a
-- start's target and the claim's "token replaced" check.
--
-- Rows written before keep their plain token and no hash (NULL): their look-up hash is md5(push_token),
-- which is what the targets of their pending starts already name, so nothing queued changes. They are
-- sealed when their token is registered again, and go with their visit or customer (retention, erasure).
ALTER TABLE live_activities ADD COLUMN token_hash text;
ALTER TABLE push_to_start_tokens ADD COLUMN token_hash text;
ALTER TABLE notification_tokens ADD COLUMN token_hash text;

-- A start's target names the visit and the token's look-up hash (no longer its md5, computed here).
DROP FUNCTION delivery_start_target(text, text);
CREATE FUNCTION delivery_start_target(visit_id text, token_hash text) RETURNS text
    LANGUAGE sql IMMUTABLE
    RETURN 'start' || json_build_array(visit_id, token_hash)::text;
