import Foundation
import Runtime

/// What a finished child process left behind.
struct ProcessResult: Sendable {
    var status: Int32
    var stdout: String
    var stderr: String
}

/// Runs command-line tools (curl, openssl) through Runtime's `ChildProcess`, off Swift's cooperative pool.
enum ProcessRunner {
    static func run(_ tool: String, _ arguments: [String], stdin: String? = nil, stdinFile: String? = nil) async throws
        -> ProcessResult
    {
        let input: ChildProcess.Input = stdin.map { .text($0) } ?? stdinFile.map { .file($0) } ?? .null
        let outcome = try await ChildProcess("/usr/bin/env", [tool] + arguments, input: input).run()
        return ProcessResult(status: outcome.status, stdout: outcome.stdout, stderr: outcome.stderr)
    }
}

/// Scratch directories for a test.
enum TestFiles {
    static func scratch() -> String {
        let dir = NSTemporaryDirectory() + "apns-sim-test-" + UUID().uuidString
        try? FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        return dir
    }

    static func write(_ text: String, in dir: String, name: String) -> String {
        let path = dir + "/" + name
        _ = FileManager.default.createFile(atPath: path, contents: Data(text.utf8))
        return path
    }
}
