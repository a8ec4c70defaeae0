import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// The process's open-files limit (`RLIMIT_NOFILE`), raised to fit what `serve` may hold open.
enum OpenFilesLimit {
    /// Descriptors beyond the HTTP connections: the database pool and listeners, the APNs connections,
    /// the listening socket, files read at start, libmicrohttpd's own.
    static let headroom = 256

    /// Raises the soft limit to at least `connections + databaseConnections + headroom`, up to the hard
    /// limit (`rlim_t.max` is unlimited); when even the hard limit is lower, refuses with one line naming the variable that asks for
    /// the connections.
    static func fit(connections: Int, databaseConnections: Int) throws {
        let needed = connections + databaseConnections + headroom
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else {
            throw CommandFailure("cannot read the open-files limit (errno \(errno))")
        }
        if limit.rlim_cur == rlim_t.max || limit.rlim_cur >= rlim_t(needed) { return }
        guard limit.rlim_max == rlim_t.max || limit.rlim_max >= rlim_t(needed) else {
            throw ConfigurationError(
                "LIVEVISITS_HTTP_MAX_CONNECTIONS=\(connections) needs \(needed) open files, but the hard limit is "
                    + "\(limit.rlim_max): lower LIVEVISITS_HTTP_MAX_CONNECTIONS or raise the limit (ulimit -Hn, LimitNOFILE=)")
        }
        limit.rlim_cur = rlim_t(needed)
        guard setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else {
            throw ConfigurationError(
                "LIVEVISITS_HTTP_MAX_CONNECTIONS=\(connections) needs \(needed) open files and the limit cannot be "
                    + "raised to that (errno \(errno)): lower LIVEVISITS_HTTP_MAX_CONNECTIONS")
        }
    }
}
