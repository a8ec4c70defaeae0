/// The outcome of one push. `send` never throws: every failure is a value with a classification.
public enum APNsResult: Sendable, Hashable {
    /// APNs accepted the push (200). `uniqueId` is the `apns-unique-id` it answered with, lower-case: APNs
    /// sends one in the development (sandbox) environment only, to look the push up in Apple's Push
    /// Notifications Console; nil otherwise, and when the header was not a UUID.
    case success(apnsId: String, uniqueId: String? = nil, latency: Double)
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
        case .success(let id, _, _): id
        case .failure(let failure): failure.apnsId
        }
    }

    /// The `apns-unique-id` of an accepted push (sandbox only), else nil.
    public var uniqueId: String? {
        if case .success(_, let uniqueId, _) = self { return uniqueId }
        return nil
    }

    /// Seconds from submission to the outcome.
    public var latency: Double {
        switch self {
        case .success(_, _, let latency): latency
        case .failure(let failure): failure.latency
        }
    }
}
