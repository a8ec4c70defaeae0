import LiveActivityLedger

/// A delivery a worker holds under its lease, with everything resolved at claim time: the token (so a
/// rotated one is used), whether it was retired, the device's preference, what the target already got.
struct ClaimedDelivery: Sendable, Hashable {
    var id: Int64
    var apnsId: String
    var target: String
    var visitId: String
    var customerId: String
    var activityId: String?
    var deviceId: String?
    var kind: PushIntent.Kind
    var priority: Int
    var apsTimestamp: Int64
    var body: [UInt8]
    var staleDate: Int64?
    var expiresAfterSending: Int64?
    var eventRecordedAt: Double
    var createdAt: Double
    /// This claim's attempt number (1 for the first).
    var attempt: Int
    var outcomeUnknownSince: Double?
    var pushToken: String?
    var environment: PushEnvironment?
    var registeredAtMs: Int64?
    /// For an update or end: when its Live Activity began (first registration), epoch milliseconds.
    var activityBeganAtMs: Int64?
    var tokenRetired: Bool
    var liveActivitiesEnabled: Bool
    /// The device reported `frequentPushesEnabled: true`: the larger priority-10 allowance (never reported: the smaller).
    var frequentPushesEnabled: Bool
    /// For a priority-10 update: the target's priority-10 pushes acknowledged in the last hour (else 0).
    var priority10SentLastHour: Int
    var lastSentTimestamp: Int64?
    /// For a start: the device's push-to-start token is no longer the one the start was enqueued for (its
    /// target names the token); the new token has a start of its own.
    var startTokenReplaced: Bool
    /// For a start: a live (not retired) Live Activity of the visit is registered now.
    var visitHasLiveActivity: Bool
    /// For a start of unknown outcome: a Live Activity of the visit registered since.
    var activityRegisteredSinceUnknown: Bool

    /// A broadcast to one of the visit's channels (contract §7): `pushToken` holds the channel's id.
    var isChannel: Bool { target.hasPrefix("channel[") }
}
