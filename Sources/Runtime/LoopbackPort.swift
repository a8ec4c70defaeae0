#if canImport(Glibc)
    import Glibc
#endif

/// Ports on 127.0.0.1 for servers the project starts itself (the demo's API, benchmarks, test peers).
public enum LoopbackPort {
    /// Binds 127.0.0.1:`port` (0: one the kernel picks), reads the bound port back and closes the socket
    /// again; nil when the port cannot be bound. Like a server's own socket (`SO_REUSEADDR`), a port with
    /// only TIME_WAIT connections left counts as free.
    public static func bindable(_ port: UInt16 = 0) -> UInt16? {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var one: Int32 = 1
        _ = setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0 else { return nil }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let named = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        guard named == 0 else { return nil }
        return UInt16(bigEndian: address.sin_port)
    }
}
