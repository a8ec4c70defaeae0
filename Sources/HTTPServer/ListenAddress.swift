#if canImport(Glibc)
    import Glibc
#endif

/// Where the server listens: a numeric IPv4 or IPv6 host and a port (0 picks a free port).
///
/// Parsed from `LIVEVISITS_HTTP_ADDR` style text: `127.0.0.1:8080`, `[::1]:8080`, `0.0.0.0:0`,
/// `localhost:8080` (127.0.0.1), `*:8080` or `:8080` (every IPv4 interface). Names other than
/// `localhost` are refused: resolving them would need DNS at start-up.
public struct ListenAddress: Sendable, Hashable, CustomStringConvertible {
    /// A numeric host: `127.0.0.1`, `0.0.0.0`, `::1`, `::`.
    public var host: String
    /// The TCP port; 0 asks the system for a free one.
    public var port: UInt16

    /// An address from parts already checked by the caller (see `init(parsing:)` for text).
    public init(host: String, port: UInt16) {
        self.host = host
        self.port = port
    }

    /// Parses `host:port`.
    public init(parsing text: String) throws(HTTPServerError) {
        let invalid = HTTPServerError(
            code: .invalidListenAddress, message: "listen address must look like 127.0.0.1:8080 or [::1]:8080")
        var hostPart: Substring
        let portPart: Substring
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]") else { throw invalid }
            hostPart = text[text.index(after: text.startIndex)..<close]
            let afterClose = text[text.index(after: close)...]
            guard afterClose.hasPrefix(":") else { throw invalid }
            portPart = afterClose.dropFirst()
        } else {
            guard let colon = text.lastIndex(of: ":") else { throw invalid }
            hostPart = text[..<colon]
            portPart = text[text.index(after: colon)...]
            if hostPart.contains(":") { throw invalid }  // IPv6 must be bracketed
        }
        guard !portPart.isEmpty, portPart.allSatisfy(\.isASCII), let port = UInt16(portPart) else { throw invalid }
        switch hostPart {
        case "", "*": hostPart = "0.0.0.0"
        case "localhost": hostPart = "127.0.0.1"
        default: break
        }
        let host = String(hostPart)
        guard ListenAddress.family(of: host) != nil else { throw invalid }
        self.init(host: host, port: port)
    }

    /// `AF_INET`, `AF_INET6`, or nil when `host` is not a numeric address.
    static func family(of host: String) -> Int32? {
        var v4 = in_addr()
        if inet_pton(AF_INET, host, &v4) == 1 { return AF_INET }
        var v6 = in6_addr()
        if inet_pton(AF_INET6, host, &v6) == 1 { return AF_INET6 }
        return nil
    }

    public var description: String {
        host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
    }
}
