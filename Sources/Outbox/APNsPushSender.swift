import APNs

/// The worker's `PushSender` backed by the APNs HTTP/2 client.
public struct APNsPushSender: PushSender {
    public let client: APNsClient

    public init(client: APNsClient) {
        self.client = client
    }

    public func send(_ request: PushRequest) async -> PushOutcome {
        let result = await client.send(APNsRequest(
            deviceToken: request.deviceToken,
            environment: request.environment == .production ? .production : .sandbox,
            priority: request.priority == 10 ? .immediate : .low,
            expiration: request.expiration, apnsId: request.apnsId, body: request.body))
        switch result {
        case .success(_, let latency):
            return .accepted(latency: latency)
        case .failure(let failure):
            let classification: PushFailure.Classification = switch failure.classification {
            case .retryable: .retryable
            case .tokenDead: .tokenDead
            case .configuration: .configuration
            case .permanent: .permanent
            }
            return .failed(PushFailure(
                status: failure.status, reason: failure.reasonLabel, timestamp: failure.timestamp,
                latency: failure.latency, classification: classification))
        }
    }
}
