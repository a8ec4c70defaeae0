import LiveActivityLedger
import Runtime

/// One push as the worker hands it to its `PushSender`: where it goes, the headers the outbox decided,
/// and the body as the projection produced it. Printing one never shows the token.
public struct OutgoingPush: Sendable, Hashable, CustomStringConvertible {
    /// The Live Activity's update token, or the device's push-to-start token (hex). A secret in logs.
    public var deviceToken: String
    /// A Live Activity push, or an ordinary notification (contract §9: its own topic, the bare bundle id).
    public var pushType: PushType
    /// Which push service the token belongs to.
    public var environment: PushEnvironment
    /// Delivered at once (alerts, `start`, `end`) or as routine.
    public var priority: PushPriority
    /// Seconds since 1970 after which the push service drops it (0: deliver once or never).
    public var expiration: Int64
    /// The push's id (`apns-id`): a UUID, stable across retries of one delivery.
    public var apnsId: String
    /// The JSON payload, sent as given.
    public var body: [UInt8]
    /// For a broadcast (contract §7): the channel's id (`apns-channel-id`); `deviceToken` is empty then.
    public var channelId: String?

    public init(
        deviceToken: String, environment: PushEnvironment, priority: PushPriority, expiration: Int64, apnsId: String,
        body: [UInt8], pushType: PushType = .liveActivity
    ) {
        self.pushType = pushType
        self.deviceToken = deviceToken
        self.environment = environment
        self.priority = priority
        self.expiration = expiration
        self.apnsId = apnsId
        self.body = body
    }

    /// A broadcast to a channel: the update or end a token would get, once for every device following it.
    public init(
        channelId: String, environment: PushEnvironment, priority: PushPriority, expiration: Int64, apnsId: String,
        body: [UInt8]
    ) {
        self.init(
            deviceToken: "", environment: environment, priority: priority, expiration: expiration, apnsId: apnsId,
            body: body)
        self.channelId = channelId
    }

    /// `apns-push-type`.
    public enum PushType: String, Sendable, Hashable {
        /// `liveactivity`: a start, update or end of a Live Activity.
        case liveActivity
        /// `alert`: an ordinary notification to a device's notification token.
        case alert
    }

    public var description: String {
        "OutgoingPush(\(environment.rawValue), \(channelId.map { "channel: " + $0 } ?? "token: " + Logger.fingerprint(deviceToken)), apns-id: \(apnsId), "
            + "priority: \(priority.rawValue), \(body.count) bytes)"
    }
}
