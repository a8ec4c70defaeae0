import Runtime

/// One push as the sender hands it over: where it goes and what it carries. The body is sent as
/// given (the projection produced it). Printing a request never shows the device token.
public struct APNsRequest: Sendable, Hashable, CustomStringConvertible {
    /// The device (or push-to-start) token, hex. A secret in logs. Empty for a broadcast.
    public var deviceToken: String
    /// For a broadcast (`POST /4/broadcasts/apps/<bundle>`, iOS 18 channels): the channel's id, sent as
    /// `apns-channel-id`; nil for a device push.
    public var channelId: String?
    /// Which APNs service the token belongs to.
    public var environment: APNsEnvironment
    /// `apns-push-type`.
    public var pushType: APNsPushType
    /// `apns-priority`.
    public var priority: APNsPriority
    /// `apns-expiration`: seconds since 1970 after which APNs drops the push (0: deliver once or never).
    public var expiration: Int64
    /// `apns-id`: a UUID, stable across retries of one delivery (the caller supplies it).
    public var apnsId: String
    /// The JSON payload.
    public var body: [UInt8]
    /// Seconds the request may take before it is failed as a retryable timeout (`nil`: the
    /// configuration's default).
    public var timeout: Double?

    public init(
        deviceToken: String, environment: APNsEnvironment, pushType: APNsPushType = .liveactivity,
        priority: APNsPriority, expiration: Int64, apnsId: String, body: [UInt8], timeout: Double? = nil
    ) {
        self.deviceToken = deviceToken
        self.environment = environment
        self.pushType = pushType
        self.priority = priority
        self.expiration = expiration
        self.apnsId = apnsId
        self.body = body
        self.timeout = timeout
    }

    /// A broadcast to a channel: the body a device token would get, to every device that follows it.
    public static func broadcast(
        channelId: String, environment: APNsEnvironment, priority: APNsPriority, expiration: Int64, apnsId: String,
        body: [UInt8], timeout: Double? = nil
    ) -> APNsRequest {
        var request = APNsRequest(
            deviceToken: "", environment: environment, pushType: .liveactivity, priority: priority, expiration: expiration,
            apnsId: apnsId, body: body, timeout: timeout)
        request.channelId = channelId
        return request
    }

    /// The request path: `/3/device/<token>`, or for a broadcast `/4/broadcasts/apps/<bundle>`.
    public func path(bundleId: String) -> String {
        channelId == nil ? "/3/device/\(deviceToken)" : "/4/broadcasts/apps/\(bundleId)"
    }

    /// Why this request cannot be sent, or `nil` when it can.
    public var invalidity: String? {
        if let channelId {
            if !APNsRequest.isChannelId(channelId) { return "channel id is not base64" }
            if !APNsRequest.isUUID(apnsId) { return "apns-id is not a UUID" }
            return nil
        }
        if deviceToken.isEmpty || deviceToken.utf8.count > 400 || !deviceToken.utf8.allSatisfy(APNsRequest.isHexDigit) {
            return "device token is not hex"
        }
        if !APNsRequest.isUUID(apnsId) { return "apns-id is not a UUID" }
        return nil
    }

    static func isUUID(_ text: String) -> Bool {
        var index = 0
        for byte in text.utf8 {
            switch index {
            case 8, 13, 18, 23:
                if byte != UInt8(ascii: "-") { return false }
            default:
                if !isHexDigit(byte) { return false }
            }
            index += 1
        }
        return index == 36
    }

    /// Base64 text (Apple's channel ids), at most 200 bytes: nothing that could break a header line.
    static func isChannelId(_ text: String) -> Bool {
        !text.isEmpty && text.utf8.count <= 200
            && text.utf8.allSatisfy { b in
                (b >= 48 && b <= 57) || (b >= 65 && b <= 90) || (b >= 97 && b <= 122) || b == 43 || b == 47 || b == 61
                    || b == 45 || b == 95
            }
    }

    static func isHexDigit(_ byte: UInt8) -> Bool {
        (byte >= 48 && byte <= 57) || (byte >= 97 && byte <= 102) || (byte >= 65 && byte <= 70)
    }

    public var description: String {
        "APNsRequest(\(environment.rawValue), \(channelId.map { "channel: " + $0 } ?? "token: " + Logger.fingerprint(deviceToken)), apns-id: \(apnsId), "
            + "priority: \(priority.rawValue), \(body.count) bytes)"
    }
}
