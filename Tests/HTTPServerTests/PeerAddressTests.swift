import HTTPServer
import Testing

/// `HTTPRequest.peerAddress`: the socket peer's address without its port, the key of per-address limits.
@Suite struct PeerAddressTests {
    @Test(arguments: [
        ("127.0.0.1:52100", "127.0.0.1"), ("[2001:db8::1]:443", "2001:db8::1"), ("[::ffff:192.0.2.7]:1", "::ffff:192.0.2.7"),
        ("192.0.2.7", "192.0.2.7"),
    ])
    func dropsThePort(_ remote: String, _ address: String) {
        #expect(HTTPRequest(method: .get, rawPath: "/", remoteAddress: remote).peerAddress == address)
    }

    @Test func isNilWithoutAPeer() {
        #expect(HTTPRequest(method: .get, rawPath: "/").peerAddress == nil)
    }
}
