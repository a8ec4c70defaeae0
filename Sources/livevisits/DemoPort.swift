import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Finds the port the demo's API listens on: 8080 when it is free, else one the kernel picks.
enum DemoPort {
    /// `(port, preferredWasTaken)`.
    static func choose(preferred: UInt16 = 8080) -> (UInt16, Bool) {
        if bindable(preferred) != nil { return (preferred, false) }
        return (bindable(0) ?? 0, true)
    }

    /// Binds 127.0.0.1:port, reads the bound port and closes the socket again.
    private static func bindable(_ port: UInt16) -> UInt16? {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        // Like the server's own socket: a port with only TIME_WAIT connections left is free.
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
