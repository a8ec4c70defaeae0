/// The `reason` strings the simulator answers with: Apple's documented values, plus `BadPayload`
/// for a Live Activity body the device would drop (Apple accepts those and the phone discards them;
/// the simulator refuses them so that tests notice).
public enum SimulatorReason {
    public static let badCollapseId = "BadCollapseId"
    public static let badDeviceToken = "BadDeviceToken"
    public static let badExpirationDate = "BadExpirationDate"
    public static let badMessageId = "BadMessageId"
    public static let badPriority = "BadPriority"
    public static let badTopic = "BadTopic"
    public static let deviceTokenNotForTopic = "DeviceTokenNotForTopic"
    public static let duplicateHeaders = "DuplicateHeaders"
    public static let invalidPushType = "InvalidPushType"
    public static let missingDeviceToken = "MissingDeviceToken"
    public static let missingTopic = "MissingTopic"
    public static let payloadEmpty = "PayloadEmpty"
    public static let badPayload = "BadPayload"
    public static let topicDisallowed = "TopicDisallowed"
    public static let badCertificate = "BadCertificate"
    public static let expiredProviderToken = "ExpiredProviderToken"
    public static let forbidden = "Forbidden"
    public static let invalidProviderToken = "InvalidProviderToken"
    public static let missingProviderToken = "MissingProviderToken"
    public static let badPath = "BadPath"
    public static let methodNotAllowed = "MethodNotAllowed"
    public static let unregistered = "Unregistered"
    public static let payloadTooLarge = "PayloadTooLarge"
    public static let tooManyProviderTokenUpdates = "TooManyProviderTokenUpdates"
    public static let tooManyRequests = "TooManyRequests"
    public static let internalServerError = "InternalServerError"
    public static let serviceUnavailable = "ServiceUnavailable"
    // Broadcast and channel management (iOS 18 broadcast channels).
    public static let badChannelId = "BadChannelId"
    public static let missingChannelId = "MissingChannelId"
    public static let channelNotRegistered = "ChannelNotRegistered"
    public static let cannotCreateChannelConfig = "CannotCreateChannelConfig"
    public static let badMessageStoragePolicy = "BadMessageStoragePolicy"
    public static let missingPushType = "MissingPushType"
    /// A broadcast whose `aps.event` is `start`: a channel starts nothing (the app starts its activity
    /// with `pushType: .channel(id)`), so the simulator refuses it.
    public static let startOnChannel = "BadPayload"
    /// Recorded (never answered) when a fault dropped the connection before the answer.
    public static let connectionDropped = "ConnectionDropped"
    /// Recorded (never answered) when the client reset the stream or the connection closed first.
    public static let streamClosed = "StreamClosed"
}
