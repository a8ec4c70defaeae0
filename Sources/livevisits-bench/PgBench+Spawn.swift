import Foundation

#if canImport(Glibc)
import Glibc
#endif

extension PgBench {
    /// Runs a program and returns its exit status and output. posix_spawn with an empty signal mask and
    /// default handlers, because pgbench's `-T` relies on SIGALRM, which a child of Foundation's `Process`
    /// inherits blocked here (pgbench then never stops).
    static func spawn(_ path: String, _ arguments: [String]) throws -> (status: Int32, stdout: String, stderr: String) {
        var outPipe: [Int32] = [0, 0]
        var errPipe: [Int32] = [0, 0]
        guard pipe(&outPipe) == 0, pipe(&errPipe) == 0 else { throw Failure(description: "pipe failed") }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, outPipe[1], 1)
        posix_spawn_file_actions_adddup2(&actions, errPipe[1], 2)
        posix_spawn_file_actions_addclose(&actions, outPipe[0])
        posix_spawn_file_actions_addclose(&actions, errPipe[0])
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
        let argv: [UnsafeMutablePointer<CChar>?] = ([path] + arguments).map { strdup($0) } + [nil]
        defer { for p in argv { free(p) } }
        var pid: pid_t = 0
        let rc = posix_spawn(&pid, path, &actions, &attributes, argv, environ)
        close(outPipe[1])
        close(errPipe[1])
        guard rc == 0 else {
            close(outPipe[0])
            close(errPipe[0])
            throw Failure(description: "cannot start \(path): \(String(cString: strerror(rc)))")
        }
        // stderr is read on another thread so that neither pipe can fill up and stall the child.
        let errors = ErrorCollector()
        let errRead = errPipe[0]
        let reader = Thread { errors.text = PgBench.readAll(errRead) }
        reader.start()
        let output = PgBench.readAll(outPipe[0])
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        while !errors.done { usleep(1000) }
        close(outPipe[0])
        close(errPipe[0])
        let exited = (status & 0x7f) == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f)
        return (exited, output, errors.text)
    }

    private static func readAll(_ fd: Int32) -> String {
        var data = Data()
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = read(fd, &buffer, buffer.count)
            if n > 0 { data.append(buffer, count: n) } else if n < 0 && errno == EINTR { continue } else { break }
        }
        return String(decoding: data, as: UTF8.self)
    }

    /// Holds what the stderr thread read. Written once by that thread before `done` is set.
    private final class ErrorCollector: @unchecked Sendable {
        // `value` and `finished` are only touched under `lock`.
        private let lock = NSLock()
        private var value = ""
        private var finished = false
        var text: String {
            get { lock.withLock { value } }
            set { lock.withLock { value = newValue; finished = true } }
        }
        var done: Bool { lock.withLock { finished } }
    }
}
