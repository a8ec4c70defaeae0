import Foundation
import Postgres
import Synchronization
import TestSupport
import Testing

/// The database stopped and restarted under load, on a private cluster (restarting it cannot disturb
/// other suites): requests during the outage answer 503 quickly, the API recovers without a restart,
/// and every 201 it gave is in the event log.
@Suite(.serialized, .timeLimit(.minutes(5))) struct DatabaseOutageTests {
    let port = "26447"

    func pg(_ data: URL, _ args: String...) throws -> String {
        var env = ProcessInfo.processInfo.environment
        env["LIVEVISITS_PGDATA"] = data.path
        env["LIVEVISITS_PGPORT"] = port
        let outcome = try Subprocess.runBlocking(
            TestDatabase.repositoryRoot.appendingPathComponent("scripts/pg").path, args, environment: env)
        guard outcome.status == 0 else { throw RawHTTPError(description: "scripts/pg \(args) failed: \(outcome.stderr)") }
        return outcome.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// What the load saw.
    struct Seen {
        var accepted: [(visit: String, version: Int)] = []
        var statuses: [Int: Int] = [:]
        var slowest503: Double = 0
        var others: [String] = []
    }

    final class Tally: Sendable {
        let seen = Mutex(Seen())

        func record(_ visit: String, _ answer: RawResponse, seconds: Double) {
            let version = answer.json?["version"] as? Int
            seen.withLock { seen in
                seen.statuses[answer.status, default: 0] += 1
                if answer.status == 201, let version { seen.accepted.append((visit, version)) }
                if answer.status == 503 { seen.slowest503 = max(seen.slowest503, seconds) }
                if answer.status != 201 && answer.status != 503 { seen.others.append("\(answer.status) \(answer.text)") }
            }
        }
    }

    @Test func restartUnderLoad() async throws {
        let data = TestDatabase.repositoryRoot.appendingPathComponent(".build/pg-api-outage-\(getpid())")
        _ = try pg(data, "start")
        defer {
            _ = try? pg(data, "stop")
            try? FileManager.default.removeItem(at: data)
        }
        let url = try pg(data, "url")
        let setup = PostgresPool(url: url, size: 1)
        try await Migrator(directory: TestDatabase.migrationsDirectory).migrate(pool: setup)
        await setup.close()

        let api = try await APIServer.start(databaseURL: url, poolSize: 4, acquireTimeoutSeconds: 2)
        let visits = (0..<4).map { "out-\($0)" }
        for visit in visits { #expect(try await api.schedule(visit).status == 201) }
        let tally = Tally()
        let phase = LoadPhase()

        let load = Task {
            try await withThrowingTaskGroup(of: Void.self) { group in
                for visit in visits {
                    group.addTask {
                        var i = 0
                        while !phase.isDone {
                            i += 1
                            let started = Date()
                            let answer = try await api.post(visit, "{\"type\":\"progress\",\"kilometresAway\":\(i % 50)}")
                            tally.record(visit, answer, seconds: Date().timeIntervalSince(started))
                            // A client backing off after a 503, as the contract asks of them: the simulated
                            // clients' own pace, not a wait for the server.
                            if answer.status == 503 { try await Task.sleep(nanoseconds: 50_000_000) }
                        }
                    }
                }
                try await group.waitForAll()
            }
        }
        defer { phase.finish() }
        func accepted(_ visit: String) -> Int { tally.seen.withLock { $0.accepted.filter { $0.visit == visit }.count } }
        // Every load task wrote before the outage, wrote nothing during it, and writes again after it.
        try await eventually("a 201 for every visit before the outage") { visits.allSatisfy { accepted($0) > 0 } }
        _ = try pg(data, "stop")
        // While down: readiness fails and requests answer 503.
        let ready = try await api.call("GET", "/readyz", key: nil)
        #expect(ready.status == 503)
        let before503 = tally.seen.withLock { $0.statuses[503] ?? 0 }
        try await eventually("503s while the database is down") { tally.seen.withLock { $0.statuses[503] ?? 0 } >= before503 + 4 }
        let acceptedWhileDown = visits.map(accepted)
        _ = try pg(data, "start")
        // Recovery without restarting the API: every load task has a write land again.
        try await eventually("a 201 for every visit after the restart") {
            zip(visits, acceptedWhileDown).allSatisfy { accepted($0) > $1 }
        }
        phase.finish()
        try await load.value
        #expect(try await api.call("GET", "/readyz", key: nil).status == 200)

        let seen = tally.seen.withLock { $0 }
        let accepted = seen.accepted
        let statuses = seen.statuses
        let slowest = seen.slowest503
        let others = seen.others
        print("outage load: statuses \(statuses.sorted { $0.key < $1.key }), slowest 503 \(String(format: "%.2f", slowest)) s")
        #expect(others.isEmpty, "\(others.prefix(5))")
        #expect((statuses[503] ?? 0) > 0)
        #expect((statuses[201] ?? 0) > 0)
        // "quickly": far below any client timeout (a bound against hangs, not a benchmark).
        #expect(slowest < 10)
        // Every 201 is in the log at the version it reported.
        let logged: Set<String> = try await api.pool.withConnection { c in
            Set(
                try c.query("SELECT stream_name, position FROM events").map {
                    "\(try $0.string("stream_name"))#\(try $0.int("position"))"
                })
        }
        let missing = accepted.filter { !logged.contains("visit-\($0.visit)#\($0.version)") }
        #expect(missing.isEmpty, "accepted but not logged: \(missing.prefix(5))")
        await api.stop()
    }
}

/// A flag the load tasks poll.
final class LoadPhase: Sendable {
    private let done = Mutex(false)
    var isDone: Bool { done.withLock { $0 } }
    func finish() { done.withLock { $0 = true } }
}
