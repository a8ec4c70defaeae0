import Foundation
import Outbox
import PersonalData
import Postgres
import Runtime
import Synchronization
import TestSupport
import Webhooks

/// A scratch database with webhooks switched on, a receiver, and a webhook worker sending to it over libcurl,
/// running in a task of its own until the body returns.
struct WebhookWorld {
    static let secret = "whsec-test-7f3a"
    let url: String
    let pool: PostgresPool
    let receiver: WebhookReceiver
    let worker: WebhookWorker
    let store: WebhookStore
    let keys: PersonalDataKeys

    /// Appends an event to `visit`'s stream as SQL does (the trigger writes its webhook).
    func append(_ visit: String, version: Int64, type: String, data: String = "{}", actor: String = "technician")
        async throws
    {
        _ = try await pool.query(
            """
            INSERT INTO events (stream_name, position, type, data, metadata)
            VALUES (\("visit-" + visit), \(version), \(type), \(data)::jsonb,
                    json_build_object('actorRole', \(actor)::text, 'actorSubject', 't-1')::jsonb)
            """)
    }

    func webhookRows() async throws -> [Webhook] { try await store.list(limit: 1000).reversed() }
}

func fastWebhookConfiguration(url: String) -> WebhookConfiguration {
    var configuration = WebhookConfiguration(url: url, secret: WebhookWorld.secret)
    configuration.backoff = Backoff(baseSeconds: 0.02, capSeconds: 0.2)
    configuration.pollIntervalSeconds = 0.05
    configuration.claimGatherSeconds = 0.01
    configuration.requestTimeoutSeconds = 30
    return configuration
}

func withWebhookWorld<Result>(
    clock: any WallClock = SystemClock(),
    configure: (inout WebhookConfiguration) -> Void = { _ in },
    pushesBacklogged: @escaping @Sendable () -> Bool = { false },
    answer: @escaping @Sendable (_ index: Int, _ received: WebhookReceiver.Received) -> WebhookReceiver.Answer = { _, _ in
        .status(204)
    },
    isolation: isolated (any Actor)? = #isolation,
    _ body: (WebhookWorld) async throws -> Result
) async throws -> Result {
    try await withTestDatabase { url, pool in
        try await withWebhookReceiver(answer: answer) { receiver in
            let store = WebhookStore(pool: pool, clock: clock)
            try await store.setEnabled(true)
            var configuration = fastWebhookConfiguration(url: receiver.url)
            configure(&configuration)
            let keys = PersonalDataKeys(current: nil)
            let transport = CurlWebhookTransport(maximumConnections: 8)
            let worker = WebhookWorker(
                pool: pool, configuration: configuration, transport: transport, opener: PersonalDataOpener(keys: keys),
                clock: clock, metrics: Metrics(), pushesBacklogged: pushesBacklogged)
            let running = Task { try await worker.run() }
            let world = WebhookWorld(
                url: url, pool: pool, receiver: receiver, worker: worker, store: store, keys: keys)
            let result: Result
            do {
                result = try await body(world)
            } catch {
                worker.stop()
                await receiver.stop()
                _ = try? await running.value
                await transport.close()
                throw error
            }
            worker.stop()
            await receiver.stop()
            _ = try? await running.value
            await transport.close()
            return result
        }
    }
}
