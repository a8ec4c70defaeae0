/// The outcome of one push. `send` never throws: every failure is a value with a classification.
public enum APNsResult: Sendable, Hashable {
    /// APNs accepted the push (200).
    case success(apnsId: String, latency: Double)
    /// APNs refused it, or it never got an answer.
    case failure(APNsFailure)

    /// The failure's classification, or `nil` on success.
    public var classification: APNsFailureClass? {
        if case .failure(let failure) = self { return failure.classification }
        return nil
    }

    /// The `apns-id` of the push.
    public var apnsId: String {
        switch self {
        case .success(let id, _): id
        case .failure(let failure): failure.apnsId
        }
    }

    /// Seconds from submission to the outcome.
    public var latency: Double {
        switch self {
        case .success(_, let latency): latency
        case .failure(let failure): failure.latency
        }
    }
}
