import Runtime

/// One send as the worker hands it to a `PushSender`. Printing it never shows the token.
public struct PushRequest: Sendable, Hashable, CustomStringConvertible {
    /// The hex token (an update token or a push-to-start token). A secret in logs.
    public var deviceToken: String
    public var environment: PushEnvironment
    /// `apns-priority`.
    public var priority: Int
    /// `apns-expiration`, epoch seconds.
    public var expiration: Int64
    /// `apns-id`: the delivery's UUID, the same for every attempt.
    public var apnsId: String
    /// The exact body.
    public var body: [UInt8]
    /// `aps.event` of the body.
    public var kind: PushIntent.Kind

    public init(
        deviceToken: String, environment: PushEnvironment, priority: Int, expiration: Int64, apnsId: String,
        body: [UInt8], kind: PushIntent.Kind
    ) {
        self.deviceToken = deviceToken
        self.environment = environment
        self.priority = priority
        self.expiration = expiration
        self.apnsId = apnsId
        self.body = body
        self.kind = kind
    }

    public var description: String {
        "PushRequest(\(kind.rawValue), \(environment.rawValue), token: \(Logger.fingerprint(deviceToken)), apns-id: \(apnsId))"
    }
}
