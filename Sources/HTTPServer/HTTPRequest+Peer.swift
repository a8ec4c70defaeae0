extension HTTPRequest {
    /// The peer's address without its port (`192.0.2.7`, `2001:db8::1`), when known: the socket's peer,
    /// never a header a client could write.
    public var peerAddress: String? {
        guard let remoteAddress else { return nil }
        if remoteAddress.hasPrefix("["), let close = remoteAddress.firstIndex(of: "]") {
            return String(remoteAddress[remoteAddress.index(after: remoteAddress.startIndex)..<close])
        }
        guard let colon = remoteAddress.lastIndex(of: ":") else { return remoteAddress }
        return String(remoteAddress[..<colon])
    }
}
