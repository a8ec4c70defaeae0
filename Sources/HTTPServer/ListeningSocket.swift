import Runtime

#if canImport(Glibc)
    import Glibc
#endif

/// The bound, listening TCP socket. It is made in the server's initializer so the bound port is
/// known (and connections queue in the backlog) before `run()` hands the socket to libmicrohttpd.
final class ListeningSocket: Sendable {
    /// The address actually bound (the real port when 0 was asked).
    let address: ListenAddress
    /// The descriptor while this object owns it; nil once closed or handed to the daemon.
    private let owned: Lock<Int32?>

    init(binding requested: ListenAddress, backlog: Int32) throws(HTTPServerError) {
        guard let family = ListenAddress.family(of: requested.host) else {
            throw HTTPServerError(code: .invalidListenAddress, message: "listen host is not a numeric address")
        }
        let fd = socket(family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
        guard fd >= 0 else {
            throw HTTPServerError(code: .bindFailed, message: "socket() failed", systemError: errno)
        }
        var yes: Int32 = 1
        _ = setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size))
        var storage = sockaddr_storage()
        var length: socklen_t
        if family == AF_INET {
            var sin = sockaddr_in()
            sin.sin_family = sa_family_t(AF_INET)
            sin.sin_port = requested.port.bigEndian
            _ = inet_pton(AF_INET, requested.host, &sin.sin_addr)
            length = socklen_t(MemoryLayout<sockaddr_in>.size)
            withUnsafeMutableBytes(of: &storage) { $0.storeBytes(of: sin, as: sockaddr_in.self) }
        } else {
            var sin6 = sockaddr_in6()
            sin6.sin6_family = sa_family_t(AF_INET6)
            sin6.sin6_port = requested.port.bigEndian
            _ = inet_pton(AF_INET6, requested.host, &sin6.sin6_addr)
            length = socklen_t(MemoryLayout<sockaddr_in6>.size)
            withUnsafeMutableBytes(of: &storage) { $0.storeBytes(of: sin6, as: sockaddr_in6.self) }
        }
        let bound = withUnsafePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.bind(fd, $0, length) }
        }
        guard bound == 0 else {
            let code = errno
            _ = Glibc.close(fd)
            throw HTTPServerError(code: .bindFailed, message: "cannot bind \(requested)", systemError: code)
        }
        guard listen(fd, backlog) == 0 else {
            let code = errno
            _ = Glibc.close(fd)
            throw HTTPServerError(code: .bindFailed, message: "cannot listen on \(requested)", systemError: code)
        }
        length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let named = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        var port = requested.port
        if named == 0 {
            port = withUnsafeBytes(of: &storage) { raw -> UInt16 in
                family == AF_INET
                    ? UInt16(bigEndian: raw.load(as: sockaddr_in.self).sin_port)
                    : UInt16(bigEndian: raw.load(as: sockaddr_in6.self).sin6_port)
            }
        }
        address = ListenAddress(host: requested.host, port: port)
        owned = Lock(fd)
    }

    /// Gives the descriptor to the daemon (which closes it on stop); nil if already given or closed.
    func handOver() -> Int32? {
        owned.withLock { fd in
            defer { fd = nil }
            return fd
        }
    }

    /// Closes the descriptor if this object still owns it.
    func close() {
        if let fd = handOver() { _ = Glibc.close(fd) }
    }

    deinit { close() }
}
