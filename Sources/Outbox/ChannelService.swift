import LiveActivityLedger

/// The port to APNs' channel management (iOS 18 broadcast channels), in the outbox's words, as
/// `PushSender` is for pushes. In production `APNsChannelService` (in `OutboxAPNs`) stands behind it.
/// Implementations never throw and never block Swift's cooperative pool.
public protocol ChannelService: Sendable {
    /// Creates a channel for Live Activity broadcasts; its id.
    func createChannel(environment: PushEnvironment) async -> Result<String, ChannelFailure>
    /// Deletes a channel (a channel APNs no longer knows answers `.notRegistered`).
    func deleteChannel(_ channelId: String, environment: PushEnvironment) async -> Result<Void, ChannelFailure>
    /// Every channel the app holds in `environment`.
    func listChannels(environment: PushEnvironment) async -> Result<[String], ChannelFailure>
}

/// A channel request APNs refused or never answered.
public struct ChannelFailure: Error, Sendable, Hashable, CustomStringConvertible {
    public enum Kind: String, Sendable, Hashable {
        /// APNs creates no more channels for the app (`CannotCreateChannelConfig`).
        case exhausted
        /// APNs does not know the channel (`ChannelNotRegistered`, `BadChannelId`).
        case notRegistered
        /// Try again later (429/5xx, timeouts, lost connections, an answer we could not read).
        case retryable
        /// Our setup is wrong (key, team, bundle, CA).
        case configuration
        /// The request is wrong and always will be.
        case permanent
    }

    public var kind: Kind
    /// The HTTP status, when APNs answered.
    public var status: Int?
    /// Apple's reason, or the local cause (`timeout`, `malformed_answer`).
    public var reason: String

    public init(kind: Kind, status: Int? = nil, reason: String) {
        self.kind = kind
        self.status = status
        self.reason = reason
    }

    public var description: String {
        "channel request failed (\(kind.rawValue)): \(status.map(String.init) ?? "no answer") \(reason)"
    }
}
