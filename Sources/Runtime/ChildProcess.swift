import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// Starting a child process, in one place for the executables, the benchmarks and the tests.
///
/// `posix_spawn` rather than Foundation's `Process`: `Process` misses the exit of a child whose daemon
/// lives on (`pg_ctl start`), and its children inherit this process's signal mask and ignored signals
/// (the service group ignores SIGTERM/SIGINT to handle them itself), so `pgbench -T` (SIGALRM) never
/// stopped and a SIGTERM to a child was lost. Here every child starts with an empty signal mask and
/// default handlers. Output goes to files, not pipes, so a daemon the child leaves behind cannot hold
/// them open; the blocking `waitpid` runs on a thread of its own, never on Swift's cooperative pool.
public struct ChildProcess: Sendable {
    /// Where the child's stdin comes from.
    public enum Input: Sendable {
        case null
        case file(String)
        /// The text, through a temporary file.
        case text(String)
    }

    /// Where a started child's stdout or stderr goes.
    public enum Output: Sendable {
        case discard
        /// Truncated, created when missing.
        case file(String)
        /// This process's own stream.
        case inherit
    }

    /// How a child that ran to completion ended, and what it printed.
    public struct Outcome: Sendable {
        /// The exit status, or 128 + the signal that killed it.
        public let status: Int32
        public let stdout: String
        public let stderr: String
    }

    /// A child that could not be started.
    public struct SpawnError: Error, CustomStringConvertible {
        public let path: String
        public let errno: Int32
        public var description: String { "cannot start \(path): \(String(cString: strerror(errno)))" }
    }

    public var path: String
    public var arguments: [String]
    /// The child's whole environment; nil: this process's.
    public var environment: [String: String]?
    public var input: Input

    public init(_ path: String, _ arguments: [String] = [], environment: [String: String]? = nil, input: Input = .null) {
        self.path = path
        self.arguments = arguments
        self.environment = environment
        self.input = input
    }

    /// Runs the child to completion and returns its status and output.
    public func run() async throws -> Outcome {
        let command = self
        return try await withCheckedThrowingContinuation { continuation in
            Thread.detachNewThread { continuation.resume(with: Result { try command.runBlocking() }) }
        }
    }

    /// `run()` for a caller already on a thread of its own.
    public func runBlocking() throws -> Outcome {
        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("child-\(UUID().uuidString)")
        let out = scratch.path + ".out"
        let err = scratch.path + ".err"
        defer {
            try? FileManager.default.removeItem(atPath: out)
            try? FileManager.default.removeItem(atPath: err)
        }
        let child = try start(stdout: .file(out), stderr: .file(err))
        let status = child.waitBlocking()
        return Outcome(
            status: status, stdout: (try? String(contentsOfFile: out, encoding: .utf8)) ?? "",
            stderr: (try? String(contentsOfFile: err, encoding: .utf8)) ?? "")
    }

    /// Starts the child in the background; reap it with `wait()`.
    public func start(stdout: Output = .discard, stderr: Output = .discard) throws -> RunningChild {
        var inputFile: String?
        defer { if let inputFile { try? FileManager.default.removeItem(atPath: inputFile) } }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        switch input {
        case .null: posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        case .file(let file): posix_spawn_file_actions_addopen(&actions, 0, file, O_RDONLY, 0)
        case .text(let text):
            let file = FileManager.default.temporaryDirectory.appendingPathComponent("child-\(UUID().uuidString).in").path
            guard FileManager.default.createFile(atPath: file, contents: Data(text.utf8)) else {
                throw SpawnError(path: path, errno: EIO)
            }
            inputFile = file  // the child holds it open; the name can go once it started
            posix_spawn_file_actions_addopen(&actions, 0, file, O_RDONLY, 0)
        }
        for (descriptor, output) in [(Int32(1), stdout), (Int32(2), stderr)] {
            switch output {
            case .discard: posix_spawn_file_actions_addopen(&actions, descriptor, "/dev/null", O_WRONLY, 0)
            case .file(let file):
                posix_spawn_file_actions_addopen(&actions, descriptor, file, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
            case .inherit: break
            }
        }
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var empty = sigset_t()
        sigemptyset(&empty)
        var all = sigset_t()
        sigfillset(&all)
        posix_spawnattr_setsigmask(&attributes, &empty)
        posix_spawnattr_setsigdefault(&attributes, &all)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))

        let argv = ([path] + arguments).map { strdup($0) } + [nil]
        let envp = (environment ?? ProcessInfo.processInfo.environment).map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { for pointer in argv + envp { free(pointer) } }
        var pid: pid_t = 0
        let spawned = posix_spawn(&pid, path, &actions, &attributes, argv, envp)
        guard spawned == 0 else { throw SpawnError(path: path, errno: spawned) }
        return RunningChild(pid: pid)
    }
}

/// A started child: signal it, ask whether it ended, reap it.
public final class RunningChild: Sendable {
    public let pid: Int32
    /// The exit status once reaped (by `wait()` or `exitStatus()`).
    private let reaped = Lock<Int32?>(nil)

    init(pid: Int32) { self.pid = pid }

    /// Sends `signal` (SIGTERM, SIGINT, SIGKILL…) unless the child was already reaped.
    public func signal(_ signal: Int32) {
        guard reaped.withLock({ $0 }) == nil else { return }
        kill(pid, signal)
    }

    /// The exit status when the child has ended, nil while it runs (does not block).
    public func exitStatus() -> Int32? {
        reaped.withLock { status in
            if status != nil { return status }
            var raw: Int32 = 0
            if waitpid(pid, &raw, WNOHANG) == pid { status = Self.decode(raw) }
            return status
        }
    }

    public var isRunning: Bool { exitStatus() == nil }

    /// Waits for the child to end (on a thread of its own) and returns its exit status.
    public func wait() async -> Int32 {
        await withCheckedContinuation { continuation in
            Thread.detachNewThread { continuation.resume(returning: self.waitBlocking()) }
        }
    }

    /// Sends `signal`, then waits; SIGKILL after `seconds` if it has not ended by then.
    public func stop(_ signal: Int32 = SIGTERM, killAfter seconds: Double = 10) async -> Int32 {
        self.signal(signal)
        let pid = self.pid
        let killer = DispatchWorkItem { [self] in if self.exitStatus() == nil { kill(pid, SIGKILL) } }
        DispatchQueue.global().asyncAfter(deadline: .now() + seconds, execute: killer)
        let status = await wait()
        killer.cancel()
        return status
    }

    /// `wait()` for a caller already on a thread of its own (or one that may block).
    public func waitBlocking() -> Int32 {
        if let status = reaped.withLock({ $0 }) { return status }
        var raw: Int32 = 0
        var result: pid_t
        repeat { result = waitpid(pid, &raw, 0) } while result < 0 && errno == EINTR
        if result == pid {
            let status = Self.decode(raw)
            reaped.withLock { $0 = $0 ?? status }
        }
        // ECHILD: `exitStatus()` reaped it meanwhile and stored the status under the lock.
        return reaped.withLock { $0 } ?? -1
    }

    private static func decode(_ raw: Int32) -> Int32 {
        (raw & 0x7f) == 0 ? (raw >> 8) & 0xff : 128 + (raw & 0x7f)
    }
}
