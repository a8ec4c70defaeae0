#if canImport(Glibc)
    import Glibc
#endif

/// A non-blocking, close-on-exec pipe that wakes a `poll` loop from another thread.
public enum WakePipe {
    /// Returns (read end, write end), or nil.
    public static func make() -> (Int32, Int32)? {
        var fds: [Int32] = [0, 0]
        guard pipe(&fds) == 0 else { return nil }
        for fd in fds { configure(fd, nonBlocking: true) }
        return (fds[0], fds[1])
    }

    /// Sets close-on-exec and, optionally, non-blocking mode on a descriptor.
    public static func configure(_ fd: Int32, nonBlocking: Bool) {
        _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
        if nonBlocking { _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) }
    }

    /// Reads everything written to a pipe's non-blocking read end (the wake-ups already seen).
    public static func drain(_ fd: Int32) {
        var buffer = [UInt8](repeating: 0, count: 64)
        while read(fd, &buffer, buffer.count) > 0 {}
    }

    /// Writes one wake-up byte (a full pipe already holds a wake-up, so a failed write loses nothing).
    public static func wake(_ fd: Int32) {
        var byte: UInt8 = 1
        _ = write(fd, &byte, 1)
    }
}
