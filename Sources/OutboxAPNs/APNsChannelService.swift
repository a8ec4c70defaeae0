import APNs
import LiveActivityLedger
import Outbox

/// The outbox's `ChannelService` over the APNs client's channel management: environments and answers
/// translated, nothing else. `CannotCreateChannelConfig` is `exhausted`; `ChannelNotRegistered` and
/// `BadChannelId` are `notRegistered`; the rest keeps the client's class.
public struct APNsChannelService: ChannelService {
    public let client: APNsClient

    public init(client: APNsClient) {
        self.client = client
    }

    public func createChannel(environment: PushEnvironment) async -> Result<String, ChannelFailure> {
        await client.createChannel(environment: APNsPushSender.environment(environment)).mapError(APNsChannelService.failure)
    }

    public func deleteChannel(_ channelId: String, environment: PushEnvironment) async -> Result<Void, ChannelFailure> {
        await client.deleteChannel(channelId, environment: APNsPushSender.environment(environment)).mapError(
            APNsChannelService.failure)
    }

    public func listChannels(environment: PushEnvironment) async -> Result<[String], ChannelFailure> {
        await client.listChannels(environment: APNsPushSender.environment(environment)).mapError(APNsChannelService.failure)
    }

    static func failure(_ f: APNsFailure) -> ChannelFailure {
        let kind: ChannelFailure.Kind
        switch (f.reason, f.classification) {
        case (.cannotCreateChannelConfig?, _): kind = .exhausted
        case (.channelNotRegistered?, _), (.badChannelId?, _): kind = .notRegistered
        case (_, .retryable): kind = .retryable
        case (_, .configuration): kind = .configuration
        case (_, .permanent), (_, .tokenDead): kind = .permanent
        }
        return ChannelFailure(kind: kind, status: f.status, reason: f.reasonLabel)
    }
}
