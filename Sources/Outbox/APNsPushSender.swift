import APNs

/// The worker's `PushSender` backed by the APNs HTTP/2 client. `APNsClient` is a `PushSender` itself
/// now that the outbox speaks the client's types; this wrapper stays so that existing wiring
/// (`OutboxWorker(pool:sender: APNsPushSender(client:))`) keeps working.
public struct APNsPushSender: PushSender {
    public let client: APNsClient

    public init(client: APNsClient) {
        self.client = client
    }

    public func send(_ request: APNsRequest) async -> APNsResult {
        await client.send(request)
    }
}
