import TestSupport
import Testing

@testable import Postgres

/// How `/readyz` reads the server: a primary or not, and whether commits can finish.
@Suite(.timeLimit(.minutes(1))) struct ServerStatusTests {
    @Test(arguments: [
        ("standby1", 1), ("standby1, standby2", 1), ("FIRST 2 (a, b, c)", 2), ("ANY 2 (a,b,c)", 2), ("any 1 (a)", 1),
        ("3 (a, b, c)", 3), ("*", 1), ("\"Standby 1\"", 1),
    ])
    func requiredStandbysFollowSynchronousStandbyNames(names: String, required: Int) {
        #expect(PostgresServerStatus.requiredStandbys(names) == required)
    }

    @Test func replicationIsJudgedFromWhatThePrimaryWaitsForAndWhatIsConnected() {
        func status(_ names: String, commit: String = "on", standbys: Int, synchronous: Int?) -> PostgresServerStatus {
            PostgresServerStatus(
                inRecovery: false, synchronousStandbyNames: names, synchronousCommit: commit, standbys: standbys,
                synchronousStandbys: synchronous)
        }
        #expect(status("", standbys: 0, synchronous: 0).replication == .none)
        #expect(status("", standbys: 2, synchronous: 0).replication == .asynchronous(standbys: 2))
        #expect(status("standby1", standbys: 1, synchronous: 1).replication == .synchronous(connected: 1, required: 1))
        #expect(status("standby1", standbys: 0, synchronous: 0).replication == .waitingForStandby(connected: 0, required: 1))
        #expect(
            status("ANY 2 (a, b, c)", standbys: 3, synchronous: 1).replication == .waitingForStandby(connected: 1, required: 2))
        // Commits that do not wait for a standby are not held by a missing one.
        #expect(status("standby1", commit: "local", standbys: 0, synchronous: 0).replication == .none)
        // A role that may not read sync_state: connected standbys, state unknown.
        #expect(status("standby1", standbys: 1, synchronous: nil).replication == .unknown)
        #expect(status("standby1", standbys: 0, synchronous: nil).replication == .waitingForStandby(connected: 0, required: 1))
    }

    @Test func theTestClusterIsAPrimaryWithoutStandbys() async throws {
        try await withTestDatabase(poolSize: 1) { _, pool in
            let status = try await pool.withConnection { try PostgresServerStatus.read(on: $0) }
            #expect(!status.inRecovery)
            #expect(status.replication == .none)
        }
    }
}
