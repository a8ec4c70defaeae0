import Foundation

/// What a process needs to know of the server it writes to, for `/readyz`: whether it is a primary, and
/// whether its commits can finish — a primary told to wait for synchronous standbys
/// (`synchronous_standby_names`) that has fewer of them connected than it waits for holds every commit.
public struct PostgresServerStatus: Sendable, Equatable {
    /// `pg_is_in_recovery()`: a standby (or a primary being demoted); it refuses writes.
    public var inRecovery: Bool
    /// `synchronous_standby_names`, empty when commits wait for no standby.
    public var synchronousStandbyNames: String
    /// `synchronous_commit` of this session: `off` and `local` never wait for a standby.
    public var synchronousCommit: String
    /// Standbys streaming from this server (`pg_stat_replication` rows).
    public var standbys: Int
    /// Those of them in `sync` or `quorum` state; nil when this role may not read `sync_state` (it needs
    /// `pg_monitor` or `pg_read_all_stats`).
    public var synchronousStandbys: Int?

    public init(
        inRecovery: Bool, synchronousStandbyNames: String, synchronousCommit: String, standbys: Int, synchronousStandbys: Int?
    ) {
        self.inRecovery = inRecovery
        self.synchronousStandbyNames = synchronousStandbyNames
        self.synchronousCommit = synchronousCommit
        self.standbys = standbys
        self.synchronousStandbys = synchronousStandbys
    }

    /// How commits are replicated.
    public enum Replication: Sendable, Equatable {
        /// No standby streams, and commits wait for none.
        case none
        /// Standbys stream, commits wait for none: a failover may lose the last commits.
        case asynchronous(standbys: Int)
        /// Commits wait for `required` synchronous standbys and that many are connected.
        case synchronous(connected: Int, required: Int)
        /// Commits wait for `required` synchronous standbys and fewer are connected: every commit hangs.
        case waitingForStandby(connected: Int, required: Int)
        /// Commits wait for standbys, and this role may not see which are synchronous.
        case unknown
    }

    public var replication: Replication {
        let waits =
            !synchronousStandbyNames.trimmingCharacters(in: .whitespaces).isEmpty
            && !["off", "local"].contains(synchronousCommit)
        guard waits else { return standbys == 0 ? .none : .asynchronous(standbys: standbys) }
        let required = PostgresServerStatus.requiredStandbys(synchronousStandbyNames)
        if standbys < required { return .waitingForStandby(connected: standbys, required: required) }
        guard let synchronous = synchronousStandbys else { return .unknown }
        return synchronous >= required
            ? .synchronous(connected: synchronous, required: required)
            : .waitingForStandby(connected: synchronous, required: required)
    }

    /// The standbys a commit waits for under `synchronous_standby_names`: `FIRST n (…)`, `ANY n (…)` and
    /// `n (…)` wait for n; a plain list for its first one.
    static func requiredStandbys(_ names: String) -> Int {
        let words = names.trimmingCharacters(in: .whitespaces).split(whereSeparator: { $0 == " " || $0 == "(" })
        var index = 0
        if let first = words.first, ["first", "any"].contains(first.lowercased()) { index = 1 }
        if words.count > index, let n = Int(words[index]) { return max(1, n) }
        return 1
    }

    /// Reads it in one statement.
    public static func read(on connection: PostgresConnection) throws -> PostgresServerStatus {
        let rows = try connection.query(
            """
            SELECT pg_is_in_recovery() AS in_recovery,
                   current_setting('synchronous_standby_names') AS names,
                   current_setting('synchronous_commit') AS commit_mode,
                   (SELECT count(*) FROM pg_stat_replication) AS standbys,
                   (SELECT count(*) FROM pg_stat_replication WHERE sync_state IN ('sync', 'quorum')) AS synchronous,
                   (SELECT count(*) FROM pg_stat_replication WHERE sync_state IS NULL) AS hidden
            """)
        guard let row = rows.first else {
            throw PostgresError(code: .protocolViolation, message: "the server status query returned no row")
        }
        let hidden = try row.int("hidden")
        return PostgresServerStatus(
            inRecovery: row["in_recovery"] == "t", synchronousStandbyNames: try row.string("names"),
            synchronousCommit: try row.string("commit_mode"), standbys: try row.int("standbys"),
            synchronousStandbys: hidden > 0 ? nil : try row.int("synchronous"))
    }
}
