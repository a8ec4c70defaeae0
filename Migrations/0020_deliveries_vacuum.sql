-- Issue 19: `deliveries` is a queue. Every push leaves a dead version behind at its claim and at its
-- completion, and an entry behind in the claim's index (`deliveries_due`, ordered by due time): an entry
-- that only VACUUM removes, since new entries go in at the index's other end, whose pages never split.
-- Each claim walks those entries from the oldest due time up, so until the table is vacuumed a claim costs
-- more with every push delivered since (30,000 dead entries: 2,300 buffers and 3 ms a claim; vacuumed:
-- 49 buffers, 0.2 ms; Docs/performance.md). At PostgreSQL's defaults autovacuum waits for a fifth of the
-- table to have changed; here it comes after 1 % (and at least 1,000 rows), inserts included, and is not
-- throttled. How often it can come is `autovacuum_naptime` (Docs/operations.md, "PostgreSQL settings").
ALTER TABLE deliveries SET (
    autovacuum_vacuum_scale_factor = 0.01,
    autovacuum_vacuum_threshold = 1000,
    autovacuum_vacuum_insert_scale_factor = 0.01,
    autovacuum_vacuum_insert_threshold = 1000,
    autovacuum_analyze_scale_factor = 0.02,
    autovacuum_vacuum_cost_delay = 0
);
