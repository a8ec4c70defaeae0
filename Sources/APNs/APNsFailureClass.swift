/// What the sender should do about a failed push.
public enum APNsFailureClass: String, Sendable, Hashable, CaseIterable {
    /// Try again later with backoff and the same `apns-id` (429, 500, 503, connection lost,
    /// timeouts, GOAWAY, `ExpiredProviderToken` after a refresh).
    case retryable
    /// The device token (or broadcast channel) will never work again: retire it (410
    /// `Unregistered`/`ExpiredToken`, 400 `BadDeviceToken`, 400 `DeviceTokenNotForTopic`; for a channel,
    /// `BadChannelId` or `ChannelNotRegistered` whatever their status).
    case tokenDead
    /// Our setup is wrong (key, team, topic, clock, CA): pause sending and raise an alert rather
    /// than burn retries or drop deliveries.
    case configuration
    /// This request is wrong and always will be (other 4xx): dead-letter it with the reason.
    case permanent

    /// Classifies an answer from APNs.
    public static func classify(status: Int, reason: APNsReason?) -> APNsFailureClass {
        switch (status, reason) {
        case (410, _): return .tokenDead
        case (_, .badDeviceToken?), (_, .deviceTokenNotForTopic?): return .tokenDead
        case (_, .badChannelId?), (_, .channelNotRegistered?): return .tokenDead
        case (_, .expiredProviderToken?), (_, .tooManyProviderTokenUpdates?), (_, .idleTimeout?),
            (_, .shutdown?), (_, .serviceUnavailable?), (_, .internalServerError?), (_, .tooManyRequests?):
            return .retryable
        case (_, .invalidProviderToken?), (_, .missingProviderToken?), (_, .unrelatedKeyIdInToken?),
            (_, .badEnvironmentKeyInToken?), (_, .badTopic?), (_, .topicDisallowed?), (_, .missingTopic?),
            (_, .badCertificate?), (_, .badCertificateEnvironment?), (_, .forbidden?):
            return .configuration
        case (403, _): return .configuration
        case (429, _), (500...599, _): return .retryable
        default: return .permanent
        }
    }
}
