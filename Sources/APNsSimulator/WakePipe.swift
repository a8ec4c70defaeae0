#if canImport(Glibc)
    import Glibc
#endif

/// A non-blocking, close-on-exec pipe that wakes a `poll` loop from another thread.
enum WakePipe {
    /// Returns (read end, write end), or nil.
    static func make() -> (Int32, Int32)? {
        var fds: [Int32] = [0, 0]
        guard pipe(&fds) == 0 else { return nil }
        for fd in fds { configure(fd, nonBlocking: true) }
        return (fds[0], fds[1])
    }

    /// Sets close-on-exec and, optionally, non-blocking mode on a descriptor.
    static func configure(_ fd: Int32, nonBlocking: Bool) {
        _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
        if nonBlocking { _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) }
    }
}
