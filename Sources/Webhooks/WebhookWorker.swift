import EventStore
import Foundation
import JSON
import Outbox
import PersonalData
import Postgres
import Runtime
import Synchronization

/// Sends the `webhooks` table: turns finished deliveries into webhook rows (read by a cursor, off the pushes'
/// path: `WebhookStore.collectDeliveryOutcomes`), claims due webhooks in batches under a lease (the first open one of each visit
/// only, so a visit's webhooks arrive in order), builds and signs each body, POSTs them all at once through
/// the transport, and records the batch's outcomes in one statement. A 2xx is `sent`; anything else is
/// retried with the outbox's backoff until 24 hours after the webhook was written, then it is `dead`.
///
/// It is a loop of its own beside the outbox worker: a receiver that is slow or never answers costs its
/// own requests' timeouts, never a push. Any number of workers may run against one database: `SKIP LOCKED`
/// keeps their claims apart and the per-visit rule holds across them.
public final class WebhookWorker: Service {
    public let name = "webhook-worker"
    public let configuration: WebhookConfiguration
    /// Signalled when webhooks may be due (wired to the outbox's NOTIFY; otherwise the poll finds them).
    public let wakeUp: WakeUp
    private let store: WebhookStore
    private let pool: PostgresPool
    private let transport: any WebhookTransport
    private let opener: PersonalDataOpener?
    private let clock: any WallClock
    private let metrics: Metrics
    private let logger: Logger
    private let stopping = Atomic<Bool>(false)
    private let pushesBacklogged: @Sendable () -> Bool
    /// When the loops' last claim started (or is to start, for a loop gathering): `claimTurn` spaces the next
    /// from it.
    private let lastClaimAt = Lock(-Double.infinity)
    /// Signalled by `stop()` alone: ends a loop's wait for its claim's turn (commits signal `wakeUp`).
    private let stopped: WakeUp

    /// - Parameters:
    ///   - transport: the HTTP client (`CurlWebhookTransport`).
    ///   - opener: opens the sealed personal fields of a `visit.event`'s history entry at send time (erased:
    ///     `null`); nil leaves them sealed.
    ///   - clock: due times, the lease, the 24 hours and the signature's `t` come from it, and idle waits run on it.
    ///   - pushesBacklogged: whether the pushes sharing this machine have a backlog (`OutboxWorker.hasBacklog`):
    ///     then webhooks slow down to `yieldBatchSize` every `yieldSeconds` and leave the machine to the pushes,
    ///     never stopping altogether (a push backlog that lasts must not let webhooks die).
    public init(
        pool: PostgresPool, configuration: WebhookConfiguration, transport: any WebhookTransport,
        opener: PersonalDataOpener?, clock: any WallClock = SystemClock(), wakeUp: WakeUp? = nil,
        metrics: Metrics = .shared, logger: Logger = Logger(label: "webhooks"),
        pushesBacklogged: @escaping @Sendable () -> Bool = { false }
    ) {
        self.pushesBacklogged = pushesBacklogged
        self.pool = pool
        self.store = WebhookStore(pool: pool, clock: clock)
        self.configuration = configuration
        self.transport = transport
        self.opener = opener
        self.clock = clock
        self.wakeUp = wakeUp ?? WakeUp(clock: clock)
        self.stopped = WakeUp(clock: clock)
        self.metrics = metrics
        self.logger = logger
    }

    /// A LISTEN service that wakes this worker whenever the outbox is woken (most webhooks are written by the
    /// transactions that wake it); the poll finds the others.
    public func listener(url: String) -> PostgresListener {
        PostgresListener(url: url, channels: [Outbox.channel]) { [wakeUp] _, _ in wakeUp.signal() }
    }

    public func run() async throws {
        logger.info("webhook worker started", ["webhook.loops": String(configuration.concurrentBatches)])
        let loops = Task {
            await withTaskGroup(of: Void.self) { group in
                for loop in 0..<max(1, configuration.concurrentBatches) { group.addTask { await self.claimLoop(loop) } }
            }
        }
        await withTaskCancellationHandler {
            await loops.value
        } onCancel: {
            stop()
        }
        logger.info("webhook worker stopped")
    }

    /// Claims no more; `run()` returns once the batches on the wire are recorded.
    public func stop() {
        guard !stopping.exchange(true, ordering: .relaxed) else { return }
        wakeUp.signal()
        stopped.signal()
    }

    private var isStopping: Bool { stopping.load(ordering: .relaxed) }

    private func claimLoop(_ loop: Int) async {
        var failures = 0
        var gathering = false
        while !isStopping {
            do {
                let yielding = pushesBacklogged()
                if yielding && loop > 0 {
                    try? await clock.sleep(seconds: configuration.yieldSeconds)
                    continue
                }
                let limit = yielding ? configuration.yieldBatchSize : configuration.batchSize
                await claimTurn(gathering: gathering && !yielding)
                // The batch's database work and sends run to the end even once stopping: they are recorded.
                let handled = try await Task { try await self.cycle(limit: limit) }.value
                failures = 0
                gathering = handled < limit
                if yielding {
                    try? await clock.sleep(seconds: configuration.yieldSeconds)
                } else if handled < limit {
                    _ = await wakeUp.wait(upTo: configuration.pollIntervalSeconds)
                }
            } catch {
                failures += 1
                if failures == 1 || failures % 30 == 0 {
                    logger.warning("webhook cycle failed; retrying", ["error": "\(error)"])
                }
                _ = await wakeUp.wait(upTo: min(configuration.pollIntervalSeconds * Double(failures), 5))
            }
            if isStopping { wakeUp.signal() }
        }
    }

    /// Marks a claim's start. `gathering` (the loop's last claim was not full): first waits until
    /// `claimGatherSeconds` after the loops' last claim started, and holds that moment for this claim, so that
    /// loops woken together claim one after the other, an interval apart. Never waits longer than one interval
    /// past now (a clock set back does not lengthen it).
    private func claimTurn(gathering: Bool) async {
        let now = clock.now()
        let interval = configuration.claimGatherSeconds
        let start = lastClaimAt.withLock { last -> Double in
            let start = gathering && interval > 0 ? max(now, min(last + interval, now + interval)) : now
            last = max(last, start)
            return start
        }
        guard start > now, !isStopping else { return }
        _ = await stopped.wait(upTo: start - now)
        if isStopping { stopped.signal() }  // for the other loops (one signal wakes those waiting now)
    }

    /// The deliveries finished since the last look turned into webhooks, then one claim, its sends and their
    /// record; answers how many webhooks it handled (a full collection counts as full, so the loop comes back
    /// at once for the rest).
    func cycle(limit: Int) async throws -> Int {
        let collected = try await store.collectDeliveryOutcomes(limit: limit)
        let claimed = try await store.claim(limit: limit, leaseSeconds: configuration.leaseSeconds)
        guard !claimed.isEmpty else { return collected >= limit ? limit : 0 }
        let bodies = try await self.bodies(claimed)
        let completions = await withTaskGroup(of: WebhookCompletion.self) { group in
            for (webhook, body) in zip(claimed, bodies) {
                group.addTask { await self.send(webhook, body: body) }
            }
            var out: [WebhookCompletion] = []
            for await completion in group { out.append(completion) }
            return out
        }
        try await store.complete(completions)
        return collected >= limit ? max(limit, claimed.count) : claimed.count
    }

    /// Each webhook's body: `{"id","type","visitId","occurredAt","data"}`, the same bytes on every attempt
    /// while the data it reads stays (an erased customer's personal fields then read `null`).
    func bodies(_ claimed: [ClaimedWebhook]) async throws -> [[UInt8]] {
        let positions = claimed.compactMap(\.eventPosition)
        var entries: [Int64: JSONValue] = [:]
        if !positions.isEmpty {
            let events = try await pool.withConnection { try EventStore.readEvents(globalPositions: positions, on: $0) }
            for event in events { entries[event.globalPosition] = event.historyEntry }
        }
        var out: [[UInt8]] = []
        out.reserveCapacity(claimed.count)
        for webhook in claimed {
            let data: JSONValue =
                if let position = webhook.eventPosition {
                    entries[position] ?? .null
                } else {
                    webhook.data.flatMap { try? JSONValue.parse(Array($0.utf8)) } ?? .null
                }
            let body = JSONValue.object([
                JSONMember("id", .string(webhook.webhookId)), JSONMember("type", .string(webhook.type)),
                JSONMember("visitId", .string(webhook.visitId)),
                JSONMember("occurredAt", .number(Double(webhook.occurredAt))), JSONMember("data", data),
            ]).serialized()
            if let opener, PersonalDataOpener.mayHoldSealed(body) {
                out.append(try await opener.open(body, pool: pool).bytes)
            } else {
                out.append(body)
            }
        }
        return out
    }

    private func send(_ webhook: ClaimedWebhook, body: [UInt8]) async -> WebhookCompletion {
        let signature = WebhookSignature.header(
            secret: configuration.secret, timestamp: clock.epochSeconds(), body: body)
        let started = ContinuousClock.now
        let response = await transport.post(
            WebhookRequest(
                url: configuration.url, headers: [(WebhookSignature.headerName, signature)], body: body,
                timeoutSeconds: configuration.requestTimeoutSeconds))
        let elapsed = started.duration(to: .now)
        let latency = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) * 1e-18
        let now = clock.now()
        var completion = WebhookCompletion(id: webhook.id, visitId: webhook.visitId, state: .sent, latencySeconds: latency)
        let label: String
        switch response {
        case .status(let code):
            completion.status = code
            label = String(code)
        case .failed(let reason):
            completion.reason = reason
            label = "failed"
        }
        metrics.increment(
            "livevisits_webhook_attempts_total", help: "Webhook POSTs by the receiver's status (failed: no answer).",
            labels: ["status": label])
        metrics.observe("livevisits_webhook_send_seconds", help: "Time from a webhook's POST to its answer.", value: latency)
        if !response.isSuccess {
            if now - webhook.createdAt >= configuration.maximumAgeSeconds {
                completion.state = .dead
                logger.warning(
                    "webhook dead: still failing after its maximum age",
                    ["webhook.id": String(webhook.id), "visit.id": webhook.visitId, "webhook.status": label])
            } else {
                completion.state = .pending
                completion.nextAttemptAt = now + configuration.backoff.delay(retry: webhook.attempts)
            }
        }
        metrics.increment(
            "livevisits_webhooks_finished_total", help: "Webhook attempts by what they led to (sent, pending: retried, dead).",
            labels: ["state": completion.state.rawValue])
        return completion
    }
}
