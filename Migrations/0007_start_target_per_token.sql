-- Contract §6 Starts: "At most one `start` per visit and push-to-start token." A start's target was
-- named by visit, customer and device (`start["v","c","d"]`), so a token rotated on a device could not
-- get the start its predecessor never delivered, and one token registered under two device ids got two
-- starts (two activities on one phone). A start's target now names the visit and the push-to-start
-- token, by its md5 (tokens are never copied into deliveries): `start["v","<md5>"]`. Every start check
-- (at most one per target, nothing older than what the target received, one in flight) follows.
-- Activity targets (`activity["v","a"]`) are unchanged.
CREATE FUNCTION delivery_start_target(visit_id text, push_token text) RETURNS text
    LANGUAGE sql STABLE
    RETURN 'start' || json_build_array(visit_id, md5(push_token))::text;

-- Existing starts move to their device's current token: a start already sent keeps blocking another start
-- of its visit to that token (conservative where the token rotated since: no duplicate, at worst no start).
UPDATE deliveries d
SET target = delivery_start_target(d.visit_id, t.push_token)
FROM push_to_start_tokens t
WHERE d.kind = 'start' AND t.customer_id = d.customer_id AND t.device_id = d.device_id;
