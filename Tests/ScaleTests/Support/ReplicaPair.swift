import Foundation
import Runtime
import TestSupport

/// A PostgreSQL primary and its synchronous standby, made by `scripts/pg-replica` in a folder of their own
/// (so that suites never share a pair).
struct ReplicaPair: Sendable {
    let folder: URL
    private let script = TestDatabase.repositoryRoot.appendingPathComponent("scripts/pg-replica").path
    private let environment: [String: String]

    init() {
        folder = FileManager.default.temporaryDirectory.appendingPathComponent("lv-replica-\(UUID().uuidString.prefix(8))")
        environment = ProcessInfo.processInfo.environment.merging(["LIVEVISITS_PGREPLICA_DIR": folder.path]) { $1 }
    }

    /// Runs `scripts/pg-replica <command>` (start, url, failover, stop-standby, …) and returns what it printed.
    @discardableResult
    func run(_ command: String) async throws -> String {
        let outcome = try await ChildProcess(script, [command], environment: environment).run()
        guard outcome.status == 0 else { throw Fleet.Failure("scripts/pg-replica \(command): \(outcome.stderr)") }
        return outcome.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// Stops and removes both servers, synchronously (for a `defer`).
    func destroyBlocking() {
        _ = try? ChildProcess(script, ["destroy"], environment: environment).runBlocking()
    }
}
