-- Issue 19: fewer index writes per event and per push.
--
-- Room on each page for a row's next version, so that an update changing no indexed column is a HOT
-- update: the new version goes on the same page with no new index entry, and the old one is pruned in
-- place. A visit's status, distance and answer change on every event (its indexed columns — id, customer,
-- technician, scheduled time — almost never do); a target's last sent timestamp on every push. At the
-- default fillfactor (100) the pages were full, so every such update wrote a new entry in every index.
-- (Applies to pages written from now on; `VACUUM FULL` or a replay rewrites the rest.)
ALTER TABLE visits SET (fillfactor = 70);
ALTER TABLE delivery_targets SET (fillfactor = 70);

-- The rows on the wire are found by their lease through deliveries_lease_expiry (also partial on
-- state = 'sending', and small: the claimed batches in flight): a second index over the same few rows
-- only cost one more index entry per claimed push.
DROP INDEX deliveries_leased;
