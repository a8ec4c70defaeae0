import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// Turns a host name into the addresses to connect to, for `HTTP2ClientTransport`. The transport runs it on
/// a thread of its own, never on its loop thread: a resolver that takes seconds (a slow or unreachable DNS
/// server) holds back only the connection that waits for it, not the pushes on the other hosts' connections,
/// their deadlines and keep-alive pings.
struct HTTP2Resolver: Sendable {
    /// One socket address: its family and its bytes (a `sockaddr_in` or `sockaddr_in6`).
    typealias Address = (family: Int32, address: [UInt8])

    /// The addresses of `host:port` in the order to try them, or why there are none.
    let resolve: @Sendable (_ host: String, _ port: Int) -> Result<[Address], HTTP2Exchange.Failure>

    /// The system's resolver (`getaddrinfo`: /etc/hosts, DNS, as the machine is configured).
    static let system = HTTP2Resolver { host, port in
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(host, String(port), &hints, &list)
        guard status == 0, let list else {
            return .failure(
                .init(kind: .connectFailed, message: "cannot resolve \(host): \(String(cString: gai_strerror(status)))"))
        }
        defer { freeaddrinfo(list) }
        var addresses: [Address] = []
        var entry: UnsafeMutablePointer<addrinfo>? = list
        while let current = entry {
            if let address = current.pointee.ai_addr {
                let bytes = UnsafeRawBufferPointer(start: address, count: Int(current.pointee.ai_addrlen))
                addresses.append((current.pointee.ai_family, Array(bytes)))
            }
            entry = current.pointee.ai_next
        }
        return .success(addresses)
    }
}
