import Foundation
import Runtime
import TestSupport

/// A PostgreSQL primary and its synchronous standby, made by `scripts/pg-replica` in a folder of their own
/// (so that suites never share a pair).
struct ReplicaPair: Sendable {
    let folder: URL
    private let script = TestDatabase.repositoryRoot.appendingPathComponent("scripts/pg-replica").path
    private let environment: [String: String]

    /// Lends a started pair to `body` and destroys both servers once `body` has returned or thrown. One pair
    /// at a time in a test process, whatever the suites running beside it: a failover frees its primary's
    /// port, and a server of another pair started meanwhile could take that port and be reached through the
    /// first pair's multi-host URL.
    static func with<Result>(
        isolation: isolated (any Actor)? = #isolation, _ body: (ReplicaPair) async throws -> Result
    ) async throws -> Result {
        try await withResource({ await turn.take() }, close: { _ in await turn.give() }) { _ in
            try await withResource(
                {
                    let pair = ReplicaPair()
                    try await pair.run("start")
                    return pair
                }, close: { try? await $0.run("destroy") }, body)
        }
    }

    /// The turn to hold a pair: taken in order of asking.
    private static let turn = Turn()

    private actor Turn {
        private var held = false
        private var waiting: [CheckedContinuation<Void, Never>] = []

        func take() async {
            guard held else {
                held = true
                return
            }
            await withCheckedContinuation { waiting.append($0) }
        }

        func give() {
            if waiting.isEmpty { held = false } else { waiting.removeFirst().resume() }
        }
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
