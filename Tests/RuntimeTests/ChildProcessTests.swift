import Foundation
import Runtime
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// The one way the project starts a child process.
@Suite(.timeLimit(.minutes(1))) struct ChildProcessTests {
    @Test func runCapturesStatusOutputAndInput() async throws {
        let outcome = try await ChildProcess(
            "/bin/sh", ["-c", "read line; echo out:$line; echo err >&2; exit 3"], input: .text("hello\n")
        ).run()
        #expect(outcome.status == 3)
        #expect(outcome.stdout == "out:hello\n")
        #expect(outcome.stderr == "err\n")
    }

    @Test func theEnvironmentIsTheOneGiven() async throws {
        let outcome = try await ChildProcess("/bin/sh", ["-c", "echo $ONLY-$HOME"], environment: ["ONLY": "this"]).run()
        #expect(outcome.stdout == "this-\n")
    }

    @Test func aMissingProgramIsASpawnError() async throws {
        await #expect(throws: ChildProcess.SpawnError.self) { try await ChildProcess("/nonexistent/tool").run() }
    }

    /// This process ignores SIGTERM (as a service group does); the child must not inherit that, or a
    /// SIGTERM to it is lost.
    @Test func aChildStartsWithDefaultSignalHandlers() async throws {
        _ = SignalWatcher.shared  // sets SIGTERM and SIGINT to ignored in this process
        let child = try ChildProcess("/bin/sleep", ["30"]).start()
        #expect(child.isRunning)
        // A lost SIGTERM ends in the SIGKILL 30 s later (status 137), not in a hang.
        let status = await child.stop(SIGTERM, killAfter: 30)
        #expect(status == 128 + SIGTERM)
        #expect(!child.isRunning)
    }

    @Test func startWritesOutputToAFile() async throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("child-test-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: file) }
        let child = try ChildProcess("/bin/sh", ["-c", "echo started"]).start(stdout: .file(file))
        #expect(await child.wait() == 0)
        #expect(try String(contentsOfFile: file, encoding: .utf8) == "started\n")
    }
}
