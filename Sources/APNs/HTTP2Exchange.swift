/// One HTTP/2 request as the transport sees it: no APNs knowledge, no secrets interpreted.
struct HTTP2Exchange: Sendable {
    /// `POST` (pushes, broadcasts, channel creation), `GET` (channel reads and lists) or `DELETE`.
    enum Method: String, Sendable {
        case post = "POST"
        case get = "GET"
        case delete = "DELETE"
    }

    var method: Method = .post
    /// Full URL.
    var url: String
    /// Header lines, `name: value`.
    var headers: [String]
    var body: [UInt8]
    /// Deadline for the whole exchange, in milliseconds.
    var timeoutMilliseconds: Int

    /// The answer headers the transport keeps (lower-case): all others are skipped unread.
    static let keptHeaders = ["apns-id", "apns-channel-id", "apns-request-id"]

    /// What came back.
    enum Outcome: Sendable {
        /// An HTTP answer. Header names are lower-case.
        case response(status: Int, headers: [String: String], body: [UInt8])
        /// No answer: a curl error code and its text.
        case failed(code: Int, message: String)
    }
}
