/// One HTTP/2 POST as the transport sees it: no APNs knowledge, no secrets interpreted.
struct HTTP2Exchange: Sendable {
    /// Full URL.
    var url: String
    /// Header lines, `name: value`.
    var headers: [String]
    var body: [UInt8]
    /// Deadline for the whole exchange, in milliseconds.
    var timeoutMilliseconds: Int

    /// What came back.
    enum Outcome: Sendable {
        /// An HTTP answer. Header names are lower-case.
        case response(status: Int, headers: [String: String], body: [UInt8])
        /// No answer: a curl error code and its text.
        case failed(code: Int, message: String)
    }
}
