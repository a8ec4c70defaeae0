import Foundation

/// What a finished child process left behind.
struct ProcessResult: Sendable {
    var status: Int32
    var stdout: String
    var stderr: String
}

/// Runs command-line tools (curl, openssl) without blocking Swift's cooperative pool: output goes
/// to temporary files and the exit is awaited through `terminationHandler`.
enum ProcessRunner {
    static func run(_ tool: String, _ arguments: [String], stdin: String? = nil, stdinFile: String? = nil) async throws -> ProcessResult {
        let dir = TestFiles.scratch()
        let out = dir + "/stdout"
        let err = dir + "/stderr"
        _ = FileManager.default.createFile(atPath: out, contents: nil)
        _ = FileManager.default.createFile(atPath: err, contents: nil)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = [tool] + arguments
        process.standardOutput = FileHandle(forWritingAtPath: out)
        process.standardError = FileHandle(forWritingAtPath: err)
        if let stdin {
            let input = dir + "/stdin"
            _ = FileManager.default.createFile(atPath: input, contents: Data(stdin.utf8))
            process.standardInput = FileHandle(forReadingAtPath: input)
        } else if let stdinFile {
            process.standardInput = FileHandle(forReadingAtPath: stdinFile)
        } else {
            process.standardInput = FileHandle.nullDevice
        }
        let status: Int32 = try await withCheckedThrowingContinuation { continuation in
            process.terminationHandler = { p in continuation.resume(returning: p.terminationStatus) }
            do {
                try process.run()
            } catch {
                process.terminationHandler = nil
                continuation.resume(throwing: error)
            }
        }
        let stdout = (try? String(contentsOfFile: out, encoding: .utf8)) ?? ""
        let stderr = (try? String(contentsOfFile: err, encoding: .utf8)) ?? ""
        try? FileManager.default.removeItem(atPath: dir)
        return ProcessResult(status: status, stdout: stdout, stderr: stderr)
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
