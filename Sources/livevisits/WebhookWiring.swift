import PersonalData
import Postgres
import Runtime
import Webhooks

/// What webhooks add to a `serve`/`worker` process: every process sets the database's switch from its
/// configuration (the triggers write webhook rows only while it is on); a worker with webhooks configured
/// also runs the webhook sender, a loop of its own beside the outbox worker, and its wake-ups.
enum WebhookWiring {
    static func services(
        _ configuration: WebhookConfiguration?, worker: Bool, pool: PostgresPool, listenURL: String, clock: any WallClock,
        opener: PersonalDataOpener, pushesBacklogged: @escaping @Sendable () -> Bool
    ) async throws -> [any Service] {
        let store = WebhookStore(pool: pool, clock: clock)
        try await store.setEnabled(configuration != nil)
        store.registerDepthCollector()
        guard let configuration, worker else { return [] }
        let sender = WebhookWorker(
            pool: pool, configuration: configuration,
            transport: CurlWebhookTransport(maximumConnections: configuration.maximumConnections), opener: opener,
            clock: clock, pushesBacklogged: pushesBacklogged)
        Logger(label: "livevisits").info("webhooks configured", ["webhook.host": WebhookWiring.host(configuration.url)])
        return [sender.listener(url: listenURL), sender]
    }

    /// The URL's host, for the log (never its path or query, which may carry a token).
    static func host(_ url: String) -> String {
        let rest = url.split(separator: "/", maxSplits: 3, omittingEmptySubsequences: false)
        let authority = rest.count > 2 ? rest[2] : ""
        return String(authority.split(separator: "@").last ?? "")
    }
}
