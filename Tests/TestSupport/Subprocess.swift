import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Runs a command to completion with posix_spawn on a thread of its own. Output goes through temporary
/// files, not pipes, so a daemon the command leaves behind (a PostgreSQL server) cannot hold it open.
public enum Subprocess {
    public struct Outcome: Sendable {
        public let status: Int32
        public let stdout: String
        public let stderr: String
    }

    public static func run(_ path: String, _ arguments: [String], environment: [String: String]? = nil) async throws -> Outcome {
        try await withCheckedThrowingContinuation { continuation in
            DispatchQueue.global().async {
                continuation.resume(with: Result { try runBlocking(path, arguments, environment: environment) })
            }
        }
    }

    public static func runBlocking(_ path: String, _ arguments: [String], environment: [String: String]? = nil) throws -> Outcome {
        let dir = FileManager.default.temporaryDirectory
        let outURL = dir.appendingPathComponent("sub-\(UUID().uuidString).out")
        let errURL = dir.appendingPathComponent("sub-\(UUID().uuidString).err")
        defer {
            try? FileManager.default.removeItem(at: outURL)
            try? FileManager.default.removeItem(at: errURL)
        }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, outURL.path, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        posix_spawn_file_actions_addopen(&actions, 2, errURL.path, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        let env = (environment ?? ProcessInfo.processInfo.environment).map { "\($0.key)=\($0.value)" }
        let argv = [path] + arguments
        var pid: pid_t = 0
        let status: Int32 = withCStringArray(argv) { cArgs in
            withCStringArray(env) { cEnv in
                posix_spawn(&pid, path, &actions, nil, cArgs, cEnv)
            }
        }
        guard status == 0 else {
            throw NSError(domain: "Subprocess", code: Int(status), userInfo: [NSLocalizedDescriptionKey: "cannot start \(path): errno \(status)"])
        }
        var wstatus: Int32 = 0
        while waitpid(pid, &wstatus, 0) < 0 && errno == EINTR {}
        let exitCode: Int32 = (wstatus & 0x7f) == 0 ? (wstatus >> 8) & 0xff : 128 + (wstatus & 0x7f)
        let out = (try? String(contentsOf: outURL, encoding: .utf8)) ?? ""
        let err = (try? String(contentsOf: errURL, encoding: .utf8)) ?? ""
        return Outcome(status: exitCode, stdout: out, stderr: err)
    }

    private static func withCStringArray<R>(_ strings: [String], _ body: (UnsafePointer<UnsafeMutablePointer<CChar>?>) -> R) -> R {
        var pointers: [UnsafeMutablePointer<CChar>?] = strings.map { strdup($0) }
        pointers.append(nil)
        defer { for p in pointers { free(p) } }
        return pointers.withUnsafeBufferPointer { body($0.baseAddress!) }
    }
}

/// Runs blocking work (a raw `PostgresConnection`, `usleep`) on a thread outside Swift's cooperative pool.
public func onOwnThread<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        Thread.detachNewThread { continuation.resume(with: Result { try body() }) }
    }
}
