/// A push APNs did not accept, or that never got an answer.
public struct APNsFailure: Error, Sendable, Hashable, CustomStringConvertible {
    /// Why the push failed. Texts never hold a token or a JWT.
    public enum Cause: Sendable, Hashable {
        /// APNs answered with an error status (see `status`, `reason`).
        case rejected
        /// The request's deadline passed without an answer.
        case timedOut
        /// The connection went away with the request in flight (GOAWAY, reset, HTTP/2 framing error):
        /// APNs may or may not have received it. The next request reconnects.
        case connectionLost(String)
        /// No connection could be made (DNS, TCP, TLS handshake).
        case connectionFailed(String)
        /// The server's certificate was not trusted: a configuration problem (CA file, URL).
        case untrustedServer(String)
        /// No provider token could be presented (signing failed, store failed, cooling down).
        case providerTokenUnavailable(String)
        /// The request could not be sent as given (device token not hex, bad apns-id).
        case invalidRequest(String)
        /// APNs answered success in a shape we cannot use (a channel created without `apns-channel-id`,
        /// a list that is not JSON): retried, never taken as an empty answer.
        case malformedAnswer(String)
    }

    public let cause: Cause
    /// The HTTP status APNs answered, when it answered.
    public let status: Int?
    /// APNs's reason, when it gave one.
    public let reason: APNsReason?
    /// For 410: when APNs last knew the token valid, in milliseconds since 1970.
    public let timestamp: Int64?
    /// The request's `apns-id` (APNs echoes it).
    public let apnsId: String
    /// Seconds from submission to the answer or failure.
    public let latency: Double
    /// What the sender should do about it.
    public let classification: APNsFailureClass

    public init(
        cause: Cause, status: Int? = nil, reason: APNsReason? = nil, timestamp: Int64? = nil, apnsId: String,
        latency: Double, classification: APNsFailureClass
    ) {
        self.cause = cause
        self.status = status
        self.reason = reason
        self.timestamp = timestamp
        self.apnsId = apnsId
        self.latency = latency
        self.classification = classification
    }

    /// The metric label for the failure: Apple's reason, or the local cause.
    public var reasonLabel: String {
        if let reason { return reason.rawValue }
        switch cause {
        case .rejected: return "none"
        case .timedOut: return "timeout"
        case .connectionLost: return "connection_lost"
        case .connectionFailed: return "connection_failed"
        case .untrustedServer: return "untrusted_server"
        case .providerTokenUnavailable: return "provider_token_unavailable"
        case .invalidRequest: return "invalid_request"
        case .malformedAnswer: return "malformed_answer"
        }
    }

    public var description: String {
        var text = "APNs failure \(classification.rawValue): \(status.map(String.init) ?? "no answer") \(reasonLabel)"
        switch cause {
        case .connectionLost(let detail), .connectionFailed(let detail), .untrustedServer(let detail),
            .providerTokenUnavailable(let detail), .invalidRequest(let detail), .malformedAnswer(let detail):
            text += " (\(detail))"
        case .rejected, .timedOut: break
        }
        if let timestamp { text += " timestamp=\(timestamp)" }
        return text + " apns-id=\(apnsId)"
    }
}
