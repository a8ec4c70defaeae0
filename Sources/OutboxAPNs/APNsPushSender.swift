import APNs
import LiveActivityLedger
import Outbox

/// The outbox's `PushSender` over the APNs client: turns an `OutgoingPush` into an `APNsRequest` and the
/// `APNsResult` into a `PushOutcome`. The only place that knows both vocabularies, so the outbox never
/// depends on the shape of the APNs client's types (and the client knows nothing of the outbox).
public struct APNsPushSender: PushSender {
    public let client: APNsClient

    public init(client: APNsClient) {
        self.client = client
    }

    public func send(_ push: OutgoingPush) async -> PushOutcome {
        APNsPushSender.outcome(await client.send(APNsPushSender.request(push)))
    }

    /// The batch goes to the client as one hand-over (`APNsClient.send(all:)`).
    public func sendAll(_ pushes: [OutgoingPush]) async -> [PushOutcome] {
        await client.send(all: pushes.map(APNsPushSender.request)).map(APNsPushSender.outcome)
    }

    /// The request for a push: a Live Activity push, or an ordinary notification.
    static func request(_ push: OutgoingPush) -> APNsRequest {
        if let channel = push.channelId {
            return .broadcast(
                channelId: channel, environment: environment(push.environment),
                priority: push.priority == .immediate ? .immediate : .low, expiration: push.expiration, apnsId: push.apnsId,
                body: push.body)
        }
        return APNsRequest(
            deviceToken: push.deviceToken, environment: environment(push.environment),
            pushType: push.pushType == .alert ? .alert : .liveactivity,
            priority: push.priority == .immediate ? .immediate : .low, expiration: push.expiration, apnsId: push.apnsId,
            body: push.body)
    }

    static func environment(_ environment: PushEnvironment) -> APNsEnvironment {
        switch environment {
        case .sandbox: .sandbox
        case .production: .production
        }
    }

    /// The outcome as the outbox judges it.
    static func outcome(_ result: APNsResult) -> PushOutcome {
        switch result {
        case .success(_, let uniqueId, let latency):
            return .accepted(latency: latency, uniqueId: uniqueId)
        case .failure(let f):
            return .failed(
                PushFailure(
                    classification: classification(f), status: f.status, reason: f.reasonLabel,
                    tokenInvalidSinceMs: f.status == 410 ? f.timestamp : nil, outcomeUnknown: outcomeUnknown(f),
                    latency: f.latency))
        }
    }

    static func classification(_ f: APNsFailure) -> PushFailure.Class {
        switch f.classification {
        case .retryable: .retryable
        case .configuration: .configuration
        case .permanent: .permanent
        case .tokenDead:
            switch f.reason {
            case .badDeviceToken?: .tokenDead(.badDeviceToken)
            case .deviceTokenNotForTopic?: .tokenDead(.notForTopic)
            case .badChannelId?, .channelNotRegistered?: .tokenDead(.channelGone)
            default: .tokenDead(.unregistered)
            }
        }
    }

    /// True when the push may have reached APNs without us hearing back (a timeout, a connection lost
    /// with the request in flight); false when APNs answered or no connection was ever made.
    static func outcomeUnknown(_ f: APNsFailure) -> Bool {
        switch f.cause {
        case .timedOut, .connectionLost: true
        default: false
        }
    }
}
