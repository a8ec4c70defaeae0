import Foundation
import TestSupport
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// `livevisits demo --keep-running`: the server stays up after the visits, every curl command it prints
/// (the README's curl session) works against it, and Ctrl-C (SIGINT) stops everything with exit 0.
@Suite(.timeLimit(.minutes(10))) struct KeepRunningTests {
    @Test func printedCurlCommandsWorkAndCtrlCStopsEverything() async throws {
        let livevisits = try await BuiltProduct.livevisits()
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("lv-keep-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let output = folder.appendingPathComponent("stdout.txt")
        let demo = try BackgroundProcess(livevisits, ["demo", "--keep-running", "--dir", folder.path], output: output.path)

        // Wait for the help block (the demo plays both visits first).
        var text = ""
        do {
            try await eventually("the demo's printed curl session", within: 300, pollingEvery: 0.1) {
                text = (try? String(contentsOf: output, encoding: .utf8)) ?? ""
                return text.contains("curl -fsS --http2")
            }
        } catch {
            demo.interrupt()
            _ = try? await demo.wait()
            throw error
        }
        let curls = text.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }.filter { $0.hasPrefix("curl ") }
        #expect(curls.count == 5, "the printed curl session: \(text.suffix(1500))")
        for command in curls {
            let outcome = try await Subprocess.run("/bin/sh", ["-c", command])
            #expect(outcome.status == 0, "\(command.prefix(120)) → \(outcome.stderr)")
            #expect(!outcome.stdout.isEmpty, "\(command.prefix(120)) printed nothing")
            if command.contains("/events") { #expect(outcome.stdout.contains("completed")) }
            if command.contains("/_sim/deliveries") { #expect(outcome.stdout.contains("\"status\"")) }
        }

        demo.interrupt()
        let status = try await demo.wait()
        let final = (try? String(contentsOf: output, encoding: .utf8)) ?? ""
        #expect(status == 0, "exit status after Ctrl-C: \(final.suffix(800))")
        #expect(final.contains("stopped the PostgreSQL cluster"))
    }
}

/// A child process whose stdout goes to a file, so a test can read it while the process runs, signal it
/// and reap it.
final class BackgroundProcess: Sendable {
    let pid: pid_t

    init(_ path: String, _ arguments: [String], output: String) throws {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, output, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        posix_spawn_file_actions_addopen(&actions, 2, output + ".err", O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        let argv = ([path] + arguments).map { strdup($0) } + [nil]
        let envp = ProcessInfo.processInfo.environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { for pointer in argv + envp { free(pointer) } }
        var pid: pid_t = 0
        let status = posix_spawn(&pid, path, &actions, nil, argv, envp)
        guard status == 0 else { throw POSIXError(POSIXErrorCode(rawValue: status) ?? .EIO) }
        self.pid = pid
    }

    func interrupt() { kill(pid, SIGINT) }

    /// Reaps the process on a thread of its own and returns its exit status.
    func wait() async throws -> Int32 {
        let pid = self.pid
        return try await onOwnThread {
            var status: Int32 = 0
            while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
            return (status & 0x7f) == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f)
        }
    }
}
