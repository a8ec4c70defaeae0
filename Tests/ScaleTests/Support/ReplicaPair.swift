import Foundation
import Runtime
import TestSupport

/// A PostgreSQL primary and its synchronous standby, made by `scripts/pg-replica` in a folder of their own
/// (so that suites never share a pair).
struct ReplicaPair: Sendable {
    let folder: URL
    private let script = TestDatabase.repositoryRoot.appendingPathComponent("scripts/pg-replica").path
    private let environment: [String: String]

    /// Lends a started pair to `body` and destroys both servers once `body` has returned or thrown.
    static func with<Result>(
        isolation: isolated (any Actor)? = #isolation, _ body: (ReplicaPair) async throws -> Result
    ) async throws -> Result {
        try await withResource(
            {
                let pair = ReplicaPair()
                try await pair.run("start")
                return pair
            }, close: { try? await $0.run("destroy") }, body)
    }

    private init() {
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
}
