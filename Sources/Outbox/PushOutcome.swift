/// What became of one push. `PushSender.send` never throws: every failure is a value.
public enum PushOutcome: Sendable, Hashable {
    /// The push service accepted it.
    case accepted(latency: Double)
    /// It was refused, or never got an answer.
    case failed(PushFailure)

    /// Seconds from submission to the outcome.
    public var latency: Double {
        switch self {
        case .accepted(let latency): latency
        case .failed(let failure): failure.latency
        }
    }

    /// The failure, or nil when accepted.
    public var failure: PushFailure? {
        if case .failed(let failure) = self { return failure }
        return nil
    }
}
