/// What became of one push. `PushSender.send` never throws: every failure is a value.
public enum PushOutcome: Sendable, Hashable {
    /// The push service accepted it. `uniqueId`: the id the service gave this acceptance for tracing it in
    /// Apple's Push Notifications Console (`apns-unique-id`, sandbox only), when it gave one.
    case accepted(latency: Double, uniqueId: String? = nil)
    /// It was refused, or never got an answer.
    case failed(PushFailure)

    /// Seconds from submission to the outcome.
    public var latency: Double {
        switch self {
        case .accepted(let latency, _): latency
        case .failed(let failure): failure.latency
        }
    }

    /// The failure, or nil when accepted.
    public var failure: PushFailure? {
        if case .failed(let failure) = self { return failure }
        return nil
    }
}
