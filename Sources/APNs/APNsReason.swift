/// The `reason` APNs gives with an error status. Apple adds reasons over time: unknown ones are
/// kept as `unknown(String)`, never dropped.
public enum APNsReason: Sendable, Hashable, CustomStringConvertible {
    case badCollapseId
    case badDeviceToken
    case badExpirationDate
    case badMessageId
    case badPriority
    case badTopic
    case deviceTokenNotForTopic
    case duplicateHeaders
    case idleTimeout
    case invalidPushType
    case missingDeviceToken
    case missingTopic
    case payloadEmpty
    case topicDisallowed
    case badCertificate
    case badCertificateEnvironment
    case badEnvironmentKeyInToken
    case expiredProviderToken
    case forbidden
    case invalidProviderToken
    case missingProviderToken
    case unrelatedKeyIdInToken
    case badPath
    case methodNotAllowed
    case expiredToken
    case unregistered
    case payloadTooLarge
    case tooManyProviderTokenUpdates
    case tooManyRequests
    case internalServerError
    case serviceUnavailable
    case shutdown
    // Broadcast channels (iOS 18): broadcasts and channel management.
    case badChannelId
    case channelNotRegistered
    case cannotCreateChannelConfig
    case missingChannelId
    case badMessageStoragePolicy
    /// A reason this code does not know yet, kept verbatim.
    case unknown(String)

    private static let known: [(String, APNsReason)] = [
        ("BadCollapseId", .badCollapseId), ("BadDeviceToken", .badDeviceToken),
        ("BadExpirationDate", .badExpirationDate), ("BadMessageId", .badMessageId),
        ("BadPriority", .badPriority), ("BadTopic", .badTopic),
        ("DeviceTokenNotForTopic", .deviceTokenNotForTopic), ("DuplicateHeaders", .duplicateHeaders),
        ("IdleTimeout", .idleTimeout), ("InvalidPushType", .invalidPushType),
        ("MissingDeviceToken", .missingDeviceToken), ("MissingTopic", .missingTopic),
        ("PayloadEmpty", .payloadEmpty), ("TopicDisallowed", .topicDisallowed),
        ("BadCertificate", .badCertificate), ("BadCertificateEnvironment", .badCertificateEnvironment),
        ("BadEnvironmentKeyInToken", .badEnvironmentKeyInToken),
        ("ExpiredProviderToken", .expiredProviderToken), ("Forbidden", .forbidden),
        ("InvalidProviderToken", .invalidProviderToken), ("MissingProviderToken", .missingProviderToken),
        ("UnrelatedKeyIdInToken", .unrelatedKeyIdInToken), ("BadPath", .badPath),
        ("MethodNotAllowed", .methodNotAllowed), ("ExpiredToken", .expiredToken),
        ("Unregistered", .unregistered), ("PayloadTooLarge", .payloadTooLarge),
        ("TooManyProviderTokenUpdates", .tooManyProviderTokenUpdates), ("TooManyRequests", .tooManyRequests),
        ("InternalServerError", .internalServerError), ("ServiceUnavailable", .serviceUnavailable),
        ("Shutdown", .shutdown),
        ("BadChannelId", .badChannelId), ("ChannelNotRegistered", .channelNotRegistered),
        ("CannotCreateChannelConfig", .cannotCreateChannelConfig), ("MissingChannelId", .missingChannelId),
        ("BadMessageStoragePolicy", .badMessageStoragePolicy),
    ]
    private static let byName: [String: APNsReason] = Dictionary(uniqueKeysWithValues: known)

    /// The reason for Apple's string (`"BadDeviceToken"` → `.badDeviceToken`).
    public init(rawValue: String) {
        self = APNsReason.byName[rawValue] ?? .unknown(rawValue)
    }

    /// Apple's string for this reason.
    public var rawValue: String {
        if case .unknown(let text) = self { return text }
        return APNsReason.known.first { $0.1 == self }?.0 ?? "?"
    }

    public var description: String { rawValue }
}
