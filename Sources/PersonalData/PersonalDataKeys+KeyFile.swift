import Postgres

extension PersonalDataKeys {
    /// Why this process cannot open the customers' data keys the database holds: its key file is missing,
    /// or it is not the file they were wrapped with. `serve` and `worker` refuse to start on one (exit 1,
    /// the `message` on stderr) and `/readyz` answers 503 with the `code` while one lasts; without the
    /// check every customer's personal data would read as unreadable, one answer at a time.
    public struct KeyFileProblem: Sendable, Equatable, CustomStringConvertible {
        /// `personal_data_key_missing` (no `LIVEVISITS_PERSONAL_DATA_KEY_FILE`) or `personal_data_key_wrong`
        /// (a key file that does not open them).
        public let code: String
        /// One line naming `LIVEVISITS_PERSONAL_DATA_KEY_FILE` and the wrapping key ids (never a key's bytes).
        public let message: String
        public var description: String { message }
    }

    /// Checks this process's key files against a sample of the stored data keys: the first and the last by
    /// `key_id` (random ids, so two arbitrary customers; two index probes whatever the table's size) are
    /// unwrapped — the AES-GCM authentication of an unwrap is what proves a file right. Nil when either
    /// opens (or is stored unwrapped, or there is none): a single damaged row is not a wrong file, and reads
    /// as erased where it appears. Throws only the database's errors.
    public func keyFileProblem(on connection: PostgresConnection) throws -> KeyFileProblem? {
        let rows = try connection.query(
            """
            (SELECT key_id, data_key, wrapping_key_id, previous_data_key, previous_wrapping_key_id
             FROM personal_data_keys ORDER BY key_id LIMIT 1)
            UNION ALL
            (SELECT key_id, data_key, wrapping_key_id, previous_data_key, previous_wrapping_key_id
             FROM personal_data_keys ORDER BY key_id DESC LIMIT 1)
            """)
        var failures: [(wrappedUnder: String, code: PersonalDataError.Code)] = []
        for row in rows {
            do {
                _ = try unwrap(row)
                return nil
            } catch let error as PersonalDataError {
                let under = [row["wrapping_key_id"], row["previous_wrapping_key_id"]].compactMap { $0 }
                failures.append((under.joined(separator: " or "), error.code))
            }
        }
        guard let failure = failures.first else { return nil }
        let variable = "LIVEVISITS_PERSONAL_DATA_KEY_FILE"
        let recovery = "(Docs/operations.md, \"Recovering from a lost personal-data key\")"
        guard let current else {
            return KeyFileProblem(
                code: "personal_data_key_missing",
                message:
                    "\(variable) is not set, but the customers' data keys in the database are wrapped under \(failure.wrappedUnder): "
                    + "set it to that key file \(recovery)")
        }
        let held = ([current] + previous).map(\.id).joined(separator: ", ")
        let why =
            failure.code == .wrappingKeyMissing
            ? "the customers' data keys in the database are wrapped under \(failure.wrappedUnder)"
            : "the customers' data keys it should open (wrapped under \(failure.wrappedUnder)) fail authentication"
        return KeyFileProblem(
            code: "personal_data_key_wrong",
            message: "\(variable) holds \(held), but \(why): give the key file they were wrapped with \(recovery)")
    }

    /// The same on a connection of `pool`.
    public func keyFileProblem(pool: PostgresPool) async throws -> KeyFileProblem? {
        try await pool.withConnection { try keyFileProblem(on: $0) }
    }
}
