/// The port the webhook worker sends through: one POST, answered with the receiver's status or why there
/// was none. Implementations never block the caller's thread while the request is on the wire.
public protocol WebhookTransport: Sendable {
    func post(_ request: WebhookRequest) async -> WebhookResponse
}

/// One POST of a webhook body.
public struct WebhookRequest: Sendable {
    public var url: String
    /// Header fields besides `Content-Type: application/json`.
    public var headers: [(name: String, value: String)]
    public var body: [UInt8]
    public var timeoutSeconds: Double

    public init(url: String, headers: [(name: String, value: String)], body: [UInt8], timeoutSeconds: Double) {
        self.url = url
        self.headers = headers
        self.body = body
        self.timeoutSeconds = timeoutSeconds
    }
}

/// What came back: a status, or a failure without one (connection refused, timeout, TLS).
public enum WebhookResponse: Sendable, Hashable {
    case status(Int)
    case failed(String)

    /// A 2xx: the receiver has it.
    public var isSuccess: Bool {
        if case .status(let code) = self { return (200..<300).contains(code) }
        return false
    }
}
