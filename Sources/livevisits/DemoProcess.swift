import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// One external command the demo runs (`scripts/pg`, `openssl`), to completion, on a Dispatch thread so
/// Swift's cooperative pool never blocks. Output goes through temporary files rather than pipes: a daemon
/// the command leaves behind (the PostgreSQL server) would otherwise hold a pipe open forever.
struct DemoProcess: Sendable {
    struct Outcome: Sendable {
        var status: Int32
        var stdout: String
        var stderr: String
    }

    var executable: String
    var arguments: [String]
    var environment: [String: String]

    init(_ executable: String, _ arguments: [String], environment: [String: String] = ProcessInfo.processInfo.environment) {
        self.executable = executable
        self.arguments = arguments
        self.environment = environment
    }

    func run() async throws -> Outcome {
        let command = self
        return try await withCheckedThrowingContinuation { continuation in
            DispatchQueue.global().async {
                continuation.resume(with: Result { try command.runBlocking() })
            }
        }
    }

    /// Runs and throws a `CommandFailure` naming the command and its last stderr line when it fails.
    func check() async throws -> Outcome {
        let outcome = try await run()
        guard outcome.status == 0 else {
            let detail = outcome.stderr.split(separator: "\n").last.map(String.init) ?? "exit status \(outcome.status)"
            throw CommandFailure("\((executable as NSString).lastPathComponent) \(arguments.first ?? "") failed: \(detail)")
        }
        return outcome
    }

    private func runBlocking() throws -> Outcome {
        let temporary = FileManager.default.temporaryDirectory
        let outURL = temporary.appendingPathComponent("livevisits-demo-\(UUID().uuidString).out")
        let errURL = temporary.appendingPathComponent("livevisits-demo-\(UUID().uuidString).err")
        _ = FileManager.default.createFile(atPath: outURL.path, contents: nil)
        _ = FileManager.default.createFile(atPath: errURL.path, contents: nil)
        defer {
            try? FileManager.default.removeItem(at: outURL)
            try? FileManager.default.removeItem(at: errURL)
        }
        // posix_spawn + waitpid: Foundation's Process misses the exit of a child whose daemon lives on.
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, outURL.path, O_WRONLY | O_TRUNC, 0o600)
        posix_spawn_file_actions_addopen(&actions, 2, errURL.path, O_WRONLY | O_TRUNC, 0o600)
        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { for pointer in argv + envp { free(pointer) } }
        var pid: pid_t = 0
        let spawned = posix_spawn(&pid, executable, &actions, nil, argv, envp)
        guard spawned == 0 else { throw CommandFailure("cannot start \(executable): \(String(cString: strerror(spawned)))") }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        let exitStatus = (status & 0x7f) == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f)
        return Outcome(
            status: exitStatus,
            stdout: (try? String(contentsOf: outURL, encoding: .utf8)) ?? "",
            stderr: (try? String(contentsOf: errURL, encoding: .utf8)) ?? "")
    }
}
