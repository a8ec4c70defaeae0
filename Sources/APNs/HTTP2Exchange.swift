/// One HTTP/2 request as the transport sees it: no APNs knowledge, no secrets interpreted.
struct HTTP2Exchange: Sendable {
    /// `POST` (pushes, broadcasts, channel creation), `GET` (channel reads and lists) or `DELETE`.
    enum Method: String, Sendable {
        case post = "POST"
        case get = "GET"
        case delete = "DELETE"
    }

    var method: Method = .post
    /// Full URL: `https://host[:port]/path`.
    var url: String
    /// Header lines, `name: value`.
    var headers: [String]
    var body: [UInt8]
    /// Deadline for the whole exchange (connection included), in milliseconds.
    var timeoutMilliseconds: Int

    /// The answer headers the transport keeps (lower-case): all others are skipped unread.
    static let keptHeaders = ["apns-id", "apns-unique-id", "apns-channel-id", "apns-request-id"]

    /// Why an exchange got no answer.
    struct Failure: Error, Equatable {
        enum Kind: Sendable, Equatable {
            /// The deadline passed: the request may have reached the server.
            case timedOut
            /// No connection could be made (resolve, connect, TLS handshake, ALPN), or the request was
            /// never sent on one: the server cannot have seen it.
            case connectFailed
            /// The server's certificate is not trusted (or not for this host): a configuration problem.
            case untrustedServer
            /// The connection or the stream ended with the request sent and no complete answer.
            case connectionLost
        }

        var kind: Kind
        var message: String
    }

    /// What came back.
    enum Outcome: Sendable {
        /// An HTTP answer. Header names are lower-case.
        case response(status: Int, headers: [String: String], body: [UInt8])
        /// No answer.
        case failed(Failure)
    }
}
