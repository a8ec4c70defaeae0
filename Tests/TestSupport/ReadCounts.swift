import Postgres

/// What statements read, counted by PostgreSQL for this connection's backend: rows read from `tables` by
/// scans, plus index entries read from their indexes (an index scan's rows are counted on the index; entries
/// a scan steps over without returning them are not). Take it before and after the statements, on the same
/// connection.
public func rowsAndEntriesRead(from tables: [String], on c: PostgresConnection) throws -> Int64 {
    try sumOfCounts("pg_stat_get_tuples_fetched(r) + pg_stat_get_tuples_returned(r)", over: tables, on: c)
}

/// The pages of `tables` and their indexes that statements asked the buffer cache for (found there or read),
/// as `EXPLAIN (BUFFERS)` counts them: a walk of an index counts every page it steps over, whatever it
/// returned. Take it before and after the statements, on the same connection.
public func pagesRead(from tables: [String], on c: PostgresConnection) throws -> Int64 {
    try sumOfCounts("pg_stat_get_blocks_fetched(r)", over: tables, on: c)
}

/// `count` (an expression of the relation `r`) summed over `tables` and their indexes. The backend's pending
/// counts are flushed first and its snapshot of them dropped: a transaction's own counts show only in part
/// before it ends.
private func sumOfCounts(_ count: String, over tables: [String], on c: PostgresConnection) throws -> Int64 {
    _ = try c.query("SELECT pg_stat_force_next_flush()")
    _ = try c.query("SELECT pg_stat_clear_snapshot()")
    let sum = PostgresQuery(sql: "SELECT sum(\(count))::bigint AS n")
    return try c.query(
        """
        WITH tables AS (SELECT unnest(\(PostgresBinaryArray(tables))::text[]::regclass[]) AS r)
        \(sum) FROM (SELECT r FROM tables UNION ALL SELECT indexrelid FROM pg_index JOIN tables ON indrelid = r) s
        """
    ).rows[0].int64("n")
}
