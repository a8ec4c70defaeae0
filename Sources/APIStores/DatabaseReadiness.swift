import Postgres
import Runtime

/// What `/readyz` asks of the database: does it answer, is it a primary whose commits can finish, and is
/// every migration applied. Records `livevisits_database_synchronous_standbys_missing` as it finds it.
public struct DatabaseReadiness: Sendable {
    public let pool: PostgresPool
    public let migrator: Migrator

    public init(pool: PostgresPool, migrator: Migrator) {
        self.pool = pool
        self.migrator = migrator
    }

    /// What the database said.
    public enum Finding: Sendable {
        /// No connection or no answer.
        case unreachable
        /// The migrations folder no longer matches what was applied.
        case migrationsChanged(String)
        case answered(State)
    }

    /// The server's state as `/readyz` reports it.
    public struct State: Sendable {
        /// A standby in recovery (read-only).
        public let inRecovery: Bool
        /// `none`, `asynchronous`, `synchronous`, `waiting for a synchronous standby` or `unknown`.
        public let replication: String
        public let standbys: Int
        public let synchronousStandbyNames: String
        /// When commits wait for synchronous standbys the server does not have: how many are connected and
        /// required.
        public let missingStandbys: (connected: Int, required: Int)?
        /// Migrations not applied yet, by name.
        public let pendingMigrations: [String]
    }

    /// Asks the database (on a connection of the pool).
    public func probe() async -> Finding {
        do {
            let status = try await pool.withConnection { try PostgresServerStatus.read(on: $0) }
            let pending = try await migrator.pending(pool: pool)
            DatabaseReadiness.record(status)
            let replication: String
            var missing: (connected: Int, required: Int)? = nil
            switch status.replication {
            case .none: replication = "none"
            case .asynchronous: replication = "asynchronous"
            case .synchronous: replication = "synchronous"
            case .waitingForStandby(let connected, let required):
                replication = "waiting for a synchronous standby"
                missing = (connected, required)
            case .unknown: replication = "unknown"
            }
            return .answered(
                State(
                    inRecovery: status.inRecovery, replication: replication, standbys: status.standbys,
                    synchronousStandbyNames: status.synchronousStandbyNames, missingStandbys: missing,
                    pendingMigrations: pending))
        } catch let error as Migrator.MigrationError {
            return .migrationsChanged(error.message)
        } catch {
            return .unreachable
        }
    }

    /// `livevisits_database_synchronous_standbys_missing`: 1 while the primary's commits wait for a
    /// synchronous standby it does not have (every write hangs), else 0.
    static func record(_ status: PostgresServerStatus) {
        var missing = 0.0
        if case .waitingForStandby = status.replication { missing = 1 }
        Metrics.shared.set(
            "livevisits_database_synchronous_standbys_missing",
            help: "1 while the primary waits for a synchronous standby it does not have: every commit hangs.", to: missing)
    }
}
