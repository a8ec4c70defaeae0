import Foundation
import Runtime

/// The demo's private PostgreSQL cluster under `<project>/.demo/pgdata`, run through `scripts/pg` with
/// `LIVEVISITS_PGDATA` (the script reuses a running cluster, recovers a stale one after a crash, and runs
/// the server as the `postgres` user when we are root).
struct DemoCluster: Sendable {
    var script: String
    var dataDirectory: String

    private var environment: [String: String] {
        var environment = ProcessInfo.processInfo.environment
        environment["LIVEVISITS_PGDATA"] = dataDirectory
        return environment
    }

    /// Whether the cluster is already running (then the demo reuses it and leaves it running).
    func isRunning() async throws -> Bool {
        try await ChildProcess(script, ["status"], environment: environment).run().status == 0
    }

    /// Starts (or reuses) the cluster and returns its connection URL.
    func start() async throws -> String {
        _ = try await ChildProcess(script, ["start"], environment: environment).check()
        let url = try await ChildProcess(script, ["url"], environment: environment).check().stdout
            .trimmingCharacters(in: .whitespacesAndNewlines)
        guard !url.isEmpty else { throw CommandFailure("scripts/pg url printed nothing") }
        return url
    }

    func stop() async {
        _ = try? await ChildProcess(script, ["stop"], environment: environment).run()
    }
}

extension ChildProcess {
    /// Runs to completion; a non-zero exit is a `CommandFailure` naming the command and its last stderr line.
    func check() async throws -> Outcome {
        let outcome: Outcome
        do {
            outcome = try await run()
        } catch {
            throw CommandFailure("\(error)")
        }
        guard outcome.status == 0 else {
            let detail = outcome.stderr.split(separator: "\n").last.map(String.init) ?? "exit status \(outcome.status)"
            throw CommandFailure("\((path as NSString).lastPathComponent) \(arguments.first ?? "") failed: \(detail)")
        }
        return outcome
    }
}
