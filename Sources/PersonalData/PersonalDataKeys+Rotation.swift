import Postgres
import Runtime

extension PersonalDataKeys {
    /// What a rotation did.
    public struct Rotation: Sendable {
        public var rewrapped = 0
        public var batches = 0
    }

    /// Rewraps every data key not yet under `target` (`livevisits keys rotate-personal-data`), online: in
    /// transactions of at most `batchSize` rows (locked only for their own batch), each row's old wrap kept
    /// as its `previous_*` so processes still holding the old file keep reading it until they switch. Passes
    /// repeat until one finds nothing left (keys made meanwhile by processes on the old file are caught).
    /// The keys are opened with this value's files (`current`, `previous`).
    public func rotate(
        to target: WrappingKey, pool: PostgresPool, batchSize: Int = 1_000,
        progress: @escaping @Sendable (Rotation) -> Void = { _ in }
    ) async throws -> Rotation {
        var rotation = Rotation()
        while true {
            var last = ""
            var found = 0
            while true {
                let after = last
                let batch = try await pool.withTransaction { c -> (count: Int, last: String?) in
                    let rows = try c.query(
                        """
                        SELECT key_id, data_key, wrapping_key_id, previous_data_key, previous_wrapping_key_id
                        FROM personal_data_keys
                        WHERE wrapping_key_id IS DISTINCT FROM \(target.id) AND key_id > \(after)
                        ORDER BY key_id LIMIT \(batchSize) FOR UPDATE SKIP LOCKED
                        """)
                    guard !rows.isEmpty else { return (0, nil) }
                    var ids: [String] = []
                    var wraps: [String] = []
                    var olds: [String?] = []
                    var oldIds: [String?] = []
                    for row in rows {
                        let key = try unwrap(row)
                        ids.append(key.id)
                        wraps.append(try wrap(key.bytes, keyId: key.id, under: target))
                        // An unwrapped key is not kept beside its new wrap.
                        olds.append(row["wrapping_key_id"] == nil ? nil : row["data_key"])
                        oldIds.append(row["wrapping_key_id"])
                    }
                    try c.query(
                        """
                        UPDATE personal_data_keys k SET data_key = r.wrap, wrapping_key_id = \(target.id),
                            previous_data_key = r.old, previous_wrapping_key_id = r.old_id
                        FROM unnest(\(ids)::text[], \(wraps)::text[], \(PostgresNullableArray(olds))::text[],
                                    \(PostgresNullableArray(oldIds))::text[]) AS r(key_id, wrap, old, old_id)
                        WHERE k.key_id = r.key_id
                        """)
                    return (rows.count, ids.last)
                }
                guard let next = batch.last else { break }
                found += batch.count
                rotation.rewrapped += batch.count
                rotation.batches += 1
                progress(rotation)
                last = next
            }
            if found == 0 { return rotation }
        }
    }

    /// Drops every kept previous wrap (after every process switched to the new file), then tells every
    /// process to forget the keys it caches (`PersonalDataKeyCache`), so none keeps opening with a key it
    /// unwrapped from the old file.
    public static func forgetPreviousWraps(pool: PostgresPool) async throws -> Int {
        var total = 0
        while true {
            let n = try await pool.withConnection { c in
                try c.query(
                    """
                    UPDATE personal_data_keys SET previous_data_key = NULL, previous_wrapping_key_id = NULL
                    WHERE key_id IN (SELECT key_id FROM personal_data_keys WHERE previous_data_key IS NOT NULL LIMIT 1000)
                    """
                ).affectedRows
            }
            total += n
            if n == 0 {
                // Processes still holding keys unwrapped from the old file drop them (and read them again).
                try await pool.withConnection { c in _ = try c.query("SELECT pg_notify(\(erasureChannel), '')") }
                return total
            }
        }
    }
}
