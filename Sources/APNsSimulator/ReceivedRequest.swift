/// A complete HTTP/2 request as the connection assembled it.
struct ReceivedRequest: Sendable {
    var connectionID: Int
    var streamID: Int32
    /// The listener the request came in on.
    var listener: SimulatorListener = .pushes
    var method: String = ""
    var path: String = ""
    /// Regular headers (not pseudo-headers), lowercase names, in order.
    var headers: [(name: String, value: String)] = []
    /// The body, kept up to `bodyLimit` bytes.
    var body: [UInt8] = []
    /// The body's full size in bytes, even when longer than what was kept.
    var bodySize: Int = 0
    var receivedAt: Double = 0

    static let bodyLimit = 64 * 1024

    func header(_ name: String) -> String? { headers.last(where: { $0.name == name })?.value }
    func headerCount(_ name: String) -> Int { headers.reduce(0) { $0 + ($1.name == name ? 1 : 0) } }

    /// The bundle id of a `/4/broadcasts/apps/<bundle>` path, or nil for another path.
    var broadcastBundle: String? {
        let prefix = "/4/broadcasts/apps/"
        guard path.hasPrefix(prefix) else { return nil }
        return String(path.dropFirst(prefix.count).split(separator: "?", omittingEmptySubsequences: false).first ?? "")
    }

    /// The token of a `/3/device/<token>` path (possibly empty), or nil for another path.
    /// (Read on the path's UTF-8 bytes: it runs several times per push, and `String` splitting by `Character`
    /// made it the simulator's largest cost under load.)
    var deviceToken: String? {
        let prefix = "/3/device/".utf8
        let bytes = path.utf8
        guard bytes.starts(with: prefix) else { return nil }
        let start = bytes.index(bytes.startIndex, offsetBy: prefix.count)
        let end = bytes[start...].firstIndex(of: UInt8(ascii: "?")) ?? bytes.endIndex
        return String(path[start..<end])
    }
}
