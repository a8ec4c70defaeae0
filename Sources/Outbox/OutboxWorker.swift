import Foundation
import LiveActivityLedger
import Postgres
import Runtime
import Synchronization

/// Delivers the outbox: claims due deliveries in batches under a lease, sends them through a `PushSender`,
/// and completes each batch in one fenced statement. Any number of workers (processes or loops) may run
/// against one database: `FOR UPDATE SKIP LOCKED` keeps their claims apart, the lease (renewed by a
/// heartbeat) hands a dead worker's rows to the others, and completion only counts under the lease.
///
/// Wake it with `wakeUp.signal()` (wire `listener(url:)` into the service group: it LISTENs on
/// `Outbox.channel`); otherwise it polls every `pollIntervalSeconds`.
///
/// Stopping is graceful, never a hard cancellation: cancelling the task that runs `run()` (a service
/// group's shutdown) or calling `stop()` stops claiming; a batch on the wire is sent to the end and
/// completed (its sends are not cancelled, and its database work runs outside the cancelled task), a
/// batch claimed but not yet sent is released. `run()` returns once that is done, so the APNs client and
/// the pool can be closed after it.
public final class OutboxWorker: Service {
    public let name = "outbox-worker"
    public let configuration: OutboxConfiguration
    /// Signalled when deliveries may be due (NOTIFY on `Outbox.channel`).
    public let wakeUp: WakeUp
    private let pool: PostgresPool
    private let sender: any PushSender
    private let clock: any WallClock
    private let registry: TokenRegistry
    private let metrics: Metrics
    private let logger: Logger
    private let pause: SendingPause
    private let reapSchedule: ReapSchedule
    /// The visit side of the 8-hour renewal; nil: no renewal (activities lapse at 8 hours).
    private let renewer: (any ActivityRenewer)?
    private let renewalSchedule = ReapSchedule()
    /// The Live Activity ledger: which activities are due for renewal or lapsed, and which are renewed.
    private let ledger: LiveActivityLedger
    /// Signalled when a claim came back full (a backlog): the extra claim loops join in only then, so a
    /// trickle of pushes costs one claim per wake-up, not one per loop.
    private let backlog: WakeUp
    /// Claim loops between claiming and completing a batch. A wake-up that comes while one is busy also
    /// wakes an extra loop, which claims beside it if that batch turns out slow (`slowBatchSeconds`), so a
    /// push that arrives during a slow batch does not wait for it to finish.
    private let busyLoops = Atomic<Int>(0)
    /// Batches finished by the first loop, and the signal of each batch any loop finishes, for an extra loop
    /// waiting (on the worker's clock) to see whether the batch on the wire is slow.
    private let firstLoopBatches = Atomic<Int>(0)
    private let batchFinished: WakeUp
    /// Claims that came back full (a backlog): an extra loop woken by one claims at once.
    private let fullClaims = Atomic<Int>(0)
    /// The loops' claims, one at a time (other workers' claims still run beside them, kept apart by SKIP LOCKED).
    private let claimTurns = Turns()
    /// `hasBacklog`.
    private let backlogged = Atomic<Bool>(false)
    /// Set by `stop()`: claim no more; finish what is on the wire.
    private let stopping = Atomic<Bool>(false)
    /// Batches this worker sent but could not record because the database went away (a failover, a
    /// restart): settled first thing once a connection works again, under their own lease, so a worker
    /// that reconnects neither waits for its leases to run out nor sends those pushes a second time.
    /// Dropped once their lease has run out: the rows are then the reaper's (contract §12).
    private let unsettled = Lock<[UnsettledBatch]>([])

    /// - Parameters:
    ///   - sender: the push service behind the outbox's port (`APNsPushSender` over the APNs client; a test double).
    ///   - clock: every time the worker stores or compares (due, lease, expiry, registration) comes from it,
    ///     and every wait runs on it (the heartbeat, the polls and backoffs of its wake-ups, the gathering
    ///     delay between claims and the wait to see whether a batch on the wire is slow).
    ///   - wakeUp: shared with whoever signals new work; by default one on `clock`.
    ///   - renewer: builds the pushes that renew a still-active visit's Live Activity at
    ///     `activityRenewalSeconds` (contract §9); nil: none is renewed.
    public init(
        pool: PostgresPool, sender: any PushSender, configuration: OutboxConfiguration = OutboxConfiguration(),
        clock: any WallClock = SystemClock(), wakeUp: WakeUp? = nil, metrics: Metrics = .shared,
        logger: Logger = Logger(label: "outbox"), renewer: (any ActivityRenewer)? = nil
    ) {
        self.renewer = renewer
        self.pool = pool
        self.sender = sender
        self.configuration = configuration
        self.clock = clock
        self.wakeUp = wakeUp ?? WakeUp(clock: clock)
        self.backlog = WakeUp(clock: clock)
        self.batchFinished = WakeUp(clock: clock)
        self.registry = TokenRegistry(clock: clock)
        self.ledger = LiveActivityLedger(
            settings: LiveActivityLedger.Settings(
                renewalSeconds: configuration.activityRenewalSeconds, lifetimeSeconds: configuration.activityLifetimeSeconds,
                maxRenewals: configuration.maxRenewals, priority10PerHour: configuration.priority10PerHour,
                priority10PerHourFrequent: configuration.priority10PerHourFrequent),
            clock: clock, metrics: metrics)
        self.metrics = metrics
        self.logger = logger
        self.pause = SendingPause(configuration: configuration)
        self.reapSchedule = ReapSchedule()
    }

    /// A LISTEN service that wakes this worker on `Outbox.channel` (and after any reconnect).
    public func listener(url: String) -> PostgresListener {
        PostgresListener(url: url, channels: [Outbox.channel]) { [self] _, _ in wake() }
    }

    /// New deliveries may be due: wakes the first loop, and an extra one when a loop is mid-batch.
    public func wake() {
        wakeUp.signal()
        // One extra loop, not all of them: the others' claims would come back empty.
        if busyLoops.load(ordering: .relaxed) > 0 { backlog.signalOne() }
    }

    /// Claims and sends until stopped (`stop()` or cancellation of the calling task), then returns once
    /// the batches in flight are completed.
    public func run() async throws {
        logger.info("outbox worker started", ["outbox.loops": String(configuration.concurrentBatches)])
        // The loops run in a task of their own so that cancelling `run()` reaches them only as `stop()`:
        // a cancelled task would cut short the sends on the wire and the completion that records them.
        let loops = Task {
            await withTaskGroup(of: Void.self) { group in
                for loop in 0..<max(1, configuration.concurrentBatches) {
                    group.addTask { await self.claimLoop(loop) }
                }
            }
        }
        await withTaskCancellationHandler {
            await loops.value
        } onCancel: {
            stop()
        }
        // A batch whose recording failed in the last cycle gets one more try before the worker goes.
        try? await uncancelled { try await self.settleUnsettled() }
        logger.info("outbox worker stopped")
    }

    /// Asks the worker to stop claiming; `run()` returns once the batches in flight are completed.
    public func stop() {
        guard !stopping.exchange(true, ordering: .relaxed) else { return }
        logger.info("outbox worker stopping: no more claims; finishing the sends in flight")
        wakeUp.signal()
        backlog.signal()
    }

    /// Whether `stop()` was called (or `run()`'s task cancelled).
    public var isStopping: Bool { stopping.load(ordering: .relaxed) }

    /// Whether this worker has a backlog: its last claim came back full (until its first loop claims a part
    /// batch). Work that may wait for pushes (webhooks) yields while it is true.
    public var hasBacklog: Bool { backlogged.load(ordering: .relaxed) }

    private func claimLoop(_ loop: Int) async {
        var failures = 0
        var lastClaimWasFull = false
        var seenFullClaims = 0
        while !isStopping {
            if loop > 0 && !lastClaimWasFull {
                // An extra loop: wait for a backlog (or the slow poll) before claiming. Woken by a push that came
                // while a batch was on the wire, it claims only if that batch is slow: a quick one's loop claims
                // the push itself, in one claim with whatever else came meanwhile.
                let signalled = await backlog.wait(upTo: configuration.pollIntervalSeconds)
                if isStopping { break }
                let full = fullClaims.load(ordering: .relaxed)
                if signalled && full == seenFullClaims {
                    let slow = await batchOnTheWireIsSlow()
                    if !slow { continue }
                }
                seenFullClaims = full
            }
            if let remaining = pause.remaining(now: clock.now()) {
                setAlert(true)
                _ = await wakeUp.wait(upTo: min(remaining, configuration.pollIntervalSeconds))
                wakeOthersIfStopping()
                continue
            }
            do {
                let started = clock.now()
                // The first loop waits next (for a due time, a wake-up): it learns the due time in the completion.
                let (handled, nextDue) = try await cycleCountedBusy(firstLoop: loop == 0)
                failures = 0
                lastClaimWasFull = handled >= configuration.batchSize
                if lastClaimWasFull {
                    fullClaims.add(1, ordering: .relaxed)
                    backlog.signal()
                }
                if lastClaimWasFull || loop == 0 { backlogged.store(lastClaimWasFull, ordering: .relaxed) }
                if loop == 0 && !lastClaimWasFull {
                    // A part batch took what was due: claim again only once more is (a wake-up, a due time),
                    // not at once (an empty claim costs PostgreSQL as much as a small one).
                    try await idleWait(skipIfDue: handled > 0, known: nextDue)
                    if handled > 1 { await gather(since: started) }
                }
                wakeOthersIfStopping()
            } catch is CancellationError {
                break  // the pool's queue gave up on a cancelled claim: stopping
            } catch {
                failures += 1
                if failures == 1 || failures % 30 == 0 {
                    logger.warning("outbox cycle failed; retrying", ["error": "\(error)", "outbox.loop": String(loop)])
                }
                _ = await wakeUp.wait(upTo: min(configuration.pollIntervalSeconds * Double(failures), 5))
                wakeOthersIfStopping()
            }
        }
    }

    /// A wake-up consumed by one loop after `stop()` is passed on, so every loop sees the stop at once
    /// instead of at its next poll.
    private func wakeOthersIfStopping() {
        if isStopping {
            wakeUp.signal()
            backlog.signal()
        }
    }

    /// `cycle`, counted in `busyLoops` while it runs. The first loop learns the next due time from it.
    private func cycleCountedBusy(firstLoop: Bool) async throws -> (claimed: Int, nextDue: OutboxStore.NextDue?) {
        busyLoops.add(1, ordering: .relaxed)
        defer {
            busyLoops.subtract(1, ordering: .relaxed)
            if firstLoop { firstLoopBatches.add(1, ordering: .relaxed) }
            batchFinished.signal()
        }
        return try await cycle(learningNextDue: firstLoop)
    }

    /// Whether a batch on the wire when this was called is still there `slowBatchSeconds` later: false as soon
    /// as none is, or as the first loop finishes a batch — it then claims what came meanwhile by itself (the
    /// wake-up waits for it). Another extra loop finishing a batch does not count: it claims again only when
    /// woken, so a push that came during its batch would wait for the poll.
    private func batchOnTheWireIsSlow() async -> Bool {
        let finished = firstLoopBatches.load(ordering: .relaxed)
        let deadline = clock.now() + configuration.slowBatchSeconds
        while busyLoops.load(ordering: .relaxed) > 0 && firstLoopBatches.load(ordering: .relaxed) == finished {
            let remaining = deadline - clock.now()
            if remaining <= 0 || isStopping { return true }
            _ = await batchFinished.wait(upTo: remaining)
        }
        return false
    }

    /// Waits for a wake-up, the next due time or the poll. `skipIfDue`: returns at once while a delivery is
    /// due (one a claim left because its target had a push on the wire is due once that completes).
    /// `known`: the next due time as the last completion left it (read here otherwise).
    private func idleWait(skipIfDue: Bool = false, known: OutboxStore.NextDue? = nil) async throws {
        // (Its stop's wake-up may have been taken with a stale one, see `cycle`.)
        if isStopping { return }
        let due: Double?
        if let known {
            due = known.at
        } else {
            due = try await pool.withConnection { try OutboxStore.nextDue(on: $0) }
        }
        if skipIfDue, let due, due <= clock.now() { return }
        var wait = configuration.pollIntervalSeconds
        if let due { wait = min(wait, max(0.001, due - clock.now())) }
        _ = await wakeUp.wait(upTo: wait)
    }

    /// Under a stream of pushes (the last claim took more than one), lets a few more commits land before
    /// the next claim, so that one claim and one completion serve them together: the next claim starts no
    /// sooner than `claimGatherSeconds` after the last cycle started (`since`), so a cycle that already took
    /// that long (a loaded machine) claims again at once. On the worker's clock, never more than
    /// `claimGatherSeconds` (a clock set back does not lengthen it).
    private func gather(since: Double) async {
        let interval = configuration.claimGatherSeconds
        let remaining = min(interval, since + interval - clock.now())
        guard remaining > 0, !isStopping else { return }
        try? await clock.sleep(seconds: remaining)
    }

    /// Reaps expired leases when due, then claims, sends and completes one batch. Returns how many
    /// deliveries it claimed (0: nothing was due).
    @discardableResult
    public func runOnce() async throws -> Int {
        try await cycle(learningNextDue: false).claimed
    }

    /// `runOnce`; with `learningNextDue`, a part batch's completion also reads when a delivery is next due
    /// (returned; nil when not read: nothing claimed, a full batch, or not asked).
    private func cycle(learningNextDue: Bool) async throws -> (claimed: Int, nextDue: OutboxStore.NextDue?) {
        try await settleUnsettled()
        try await reapIfDue()
        await renewIfDue()
        let lease = UUID().uuidString.lowercased()
        let claimedAt = clock.now()
        let limit = configuration.batchSize
        let leaseSeconds = configuration.leaseSeconds
        // This worker's loops claim in turns: claiming side by side, each walked past the rows the others had
        // just locked (SKIP LOCKED visits every one of them), which under a backlog cost more than the claims.
        let claimed = try await claimTurns.run {
            try await pool.withConnection {
                try OutboxStore.claim(limit: limit, lease: lease, leaseSeconds: leaseSeconds, now: claimedAt, on: $0)
            }
        }
        metrics.increment(
            "livevisits_outbox_claims_total", help: "Claims of due deliveries, by whether they found any.",
            labels: ["found": claimed.isEmpty ? "none" : "some"])
        guard !claimed.isEmpty else { return (0, nil) }
        if isStopping || Task.isCancelled {
            try await uncancelled {
                try await self.pool.withConnection { try OutboxStore.release(ids: claimed.map(\.id), lease: lease, on: $0) }
            }
            return (claimed.count, nil)
        }

        // At most one in flight per target: a duplicate (two states raced in) yields to the newest.
        var newestByTarget: [String: ClaimedDelivery] = [:]
        for d in claimed where (newestByTarget[d.target].map { $0.apsTimestamp <= d.apsTimestamp } ?? true) {
            newestByTarget[d.target] = d
        }
        var completions: [DeliveryCompletion] = []
        var toSend: [(ClaimedDelivery, OutgoingPush)] = []
        for d in claimed {
            if newestByTarget[d.target]?.id != d.id {
                completions.append(DeliveryCompletion(id: d.id, state: .superseded, reason: "a newer state was claimed"))
                continue
            }
            switch DeliveryPolicy.preflight(d, now: claimedAt, configuration: configuration) {
            case .finish(let completion):
                completions.append(completion)
            case .send(let push):
                if push.priority.rawValue != d.priority {
                    metrics.increment(
                        "livevisits_apns_priority_downgrades_total",
                        help: "Pushes planned at priority 10 sent at 5: their target had spent its hourly allowance.")
                }
                toSend.append((d, push))
            }
        }

        let sent = await sendAll(toSend, lease: lease)
        // The heartbeat stopped with the sends: the lease lapses at the latest one lease from now.
        let batch = UnsettledBatch(lease: lease, leaseEndsAt: clock.now() + leaseSeconds, finished: completions, sent: sent)
        let nextDue: OutboxStore.NextDue?
        do {
            // A part batch's loop waits next, for the next due time: learned in the completion's round trip. A
            // wake-up that came before that read (its commit came before it, most often one this claim already
            // took) is answered by the read: taken now, so it does not start one more, empty, claim.
            let learning = learningNextDue && claimed.count < limit
            if learning && !isStopping { wakeUp.consume() }
            nextDue = try await settle(batch, findingNextDue: learning)
        } catch {
            unsettled.withLock { $0.append(batch) }
            logger.warning(
                "could not record a sent batch; recording it once the database answers again",
                ["outbox.count": String(claimed.count), "error": "\(error)"])
            throw error
        }
        return (claimed.count, nextDue)
    }

    /// A claimed batch after its sends: what preflight finished and what was sent, to be judged and
    /// completed under `lease`.
    private struct UnsettledBatch: Sendable {
        let lease: String
        /// When the lease lapses if no heartbeat renews it: after that the rows are the reaper's.
        let leaseEndsAt: Double
        let finished: [DeliveryCompletion]
        let sent: [Sent]
    }

    /// Judges the sends (retiring tokens, pausing) and completes the batch in one fenced statement; with
    /// `findingNextDue`, the same round trip also learns when a delivery is next due (returned).
    @discardableResult
    private func settle(_ batch: UnsettledBatch, findingNextDue: Bool = false) async throws -> OutboxStore.NextDue? {
        let completions = batch.finished + (try await uncancelled { try await self.outcomes(batch.sent) })
        let lease = batch.lease
        let (done, nextDue) = try await uncancelled { [completions] in
            try await self.pool.withConnection {
                try OutboxStore.complete(
                    completions, lease: lease, now: self.clock.now(), findingNextDue: findingNextDue, on: $0)
            }
        }
        record(completions, sent: batch.sent, completedIds: done)
        try await channelsEnded(batch.sent, completedIds: done)
        return nextDue
    }

    /// Settles the batches a lost connection left unrecorded, oldest first; the first that fails again
    /// stops the cycle (the database is still away). One whose lease ran out is given up to the reaper.
    private func settleUnsettled() async throws {
        while let batch = unsettled.withLock({ $0.isEmpty ? nil : $0.removeFirst() }) {
            guard clock.now() < batch.leaseEndsAt else {
                logger.warning(
                    "gave up recording a sent batch: its lease ran out and the rows go back to the queue",
                    ["outbox.count": String(batch.finished.count + batch.sent.count)])
                continue
            }
            do {
                try await settle(batch)
                logger.info(
                    "recorded a batch sent before the database connection was lost",
                    ["outbox.count": String(batch.finished.count + batch.sent.count)])
            } catch {
                unsettled.withLock { $0.insert(batch, at: 0) }
                throw error
            }
        }
    }

    /// Runs the writes that settle a claimed batch to the end even while the worker is cancelled: the pool
    /// gives a cancelled task no place in its queue, and a batch that was sent (or must be released) is
    /// recorded, not left to the lease's expiry.
    private func uncancelled<T: Sendable>(_ body: @escaping @Sendable () async throws -> T) async throws -> T {
        try await Task { try await body() }.value
    }

    // MARK: sending

    private struct Sent: Sendable {
        let delivery: ClaimedDelivery
        let push: OutgoingPush
        let outcome: PushOutcome
        let attemptedAt: Double
        let answeredAt: Double
        /// A `DeviceTokenNotForTopic` judged a configuration error: one of too many (see `judged`).
        var topicLooksWrong = false
    }

    /// Sends a batch, at most `maximumConcurrentSends` at a time, while a heartbeat keeps the lease.
    private func sendAll(_ items: [(ClaimedDelivery, OutgoingPush)], lease: String) async -> [Sent] {
        guard !items.isEmpty else { return [] }
        let heartbeat = Task { await self.heartbeat(lease: lease) }
        defer { heartbeat.cancel() }
        var results: [Sent] = []
        results.reserveCapacity(items.count)
        let chunk = max(1, configuration.maximumConcurrentSends)
        var start = 0
        while start < items.count {
            let slice = items[start..<min(items.count, start + chunk)]
            start += slice.count
            let attemptedAt = clock.now()
            let outcomes = await sender.sendAll(slice.map(\.1))
            let answeredAt = clock.now()
            for ((delivery, push), outcome) in zip(slice, outcomes) {
                results.append(
                    Sent(delivery: delivery, push: push, outcome: outcome, attemptedAt: attemptedAt, answeredAt: answeredAt))
            }
        }
        return results
    }

    private func heartbeat(lease: String) async {
        let interval = max(0.05, configuration.leaseSeconds / 3)
        let leaseSeconds = configuration.leaseSeconds
        while !Task.isCancelled {
            do { try await clock.sleep(seconds: interval) } catch { return }
            let now = clock.now()
            _ = try? await pool.withConnection {
                try OutboxStore.heartbeat(lease: lease, leaseSeconds: leaseSeconds, now: now, on: $0)
            }
        }
    }

    /// Turns outcomes into completions, retiring dead tokens first (so a 410 older than the latest
    /// registration does not retire it) and pausing on configuration errors — for this worker and, through
    /// the database, for every worker on it.
    private func outcomes(_ answered: [Sent]) async throws -> [DeliveryCompletion] {
        let now = clock.now()
        let sent = judged(answered, now: now)
        var retired: [Int64: Bool] = [:]
        let dead = sent.compactMap { s -> (Sent, TokenRegistry.RetirementReason)? in
            guard case .tokenDead(let reason)? = s.outcome.failure?.classification else { return nil }
            return (s, reason)
        }
        if !dead.isEmpty {
            let registry = self.registry
            let ledger = self.ledger
            retired = try await pool.withConnection { connection in
                var out: [Int64: Bool] = [:]
                for (s, reason) in dead {
                    let d = s.delivery
                    if d.isChannel {
                        // BadChannelId / ChannelNotRegistered (contract §7): forget the channel, no retry.
                        out[d.id] = try ChannelStore.forget(
                            target: d.target, channelId: s.push.channelId, reason: s.outcome.failure?.reason ?? reason.rawValue,
                            now: now, on: connection)
                        continue
                    }
                    let holder: TokenRegistry.Holder
                    if d.kind == .start, let device = d.deviceId {
                        holder = .pushToStart(customerId: d.customerId, deviceId: device)
                    } else if d.kind == .alert, let device = d.deviceId {
                        holder = .notificationDevice(customerId: d.customerId, deviceId: device)
                    } else if let activity = d.activityId {
                        holder = .liveActivity(visitId: d.visitId, activityId: activity)
                    } else {
                        continue
                    }
                    let retired = try registry.retire(
                        holder, token: s.push.deviceToken, reason: reason,
                        notRegisteredAfterMs: s.outcome.failure?.tokenInvalidSinceMs, on: connection)
                    out[d.id] = retired
                    // APNs no longer knows the activity's token: iOS ended it (a change of the ledger).
                    if retired, case .liveActivity = holder { ledger.counted(.ended) }
                }
                return out
            }
        }
        // One configuration error per batch counts once towards the pause (a batch of 500 BadTopic is one
        // problem, not 500 doublings). While the batch had one, an accepted push in it does not lift the pause.
        let configurationFailure = sent.first { $0.outcome.failure?.classification == .configuration }
        if let s = configurationFailure, let f = s.outcome.failure {
            let until = pause.configurationError(now: now)
            setAlert(true)
            let reason = f.reason
            try await pool.withConnection { try OutboxStore.pause(until: until, reason: reason, now: now, on: $0) }
            logger.error(
                s.topicLooksWrong
                    ? "many DeviceTokenNotForTopic: the topic looks wrong; sending paused, tokens kept"
                    : "APNs reports a configuration problem; sending paused",
                [
                    "apns.status": f.status.map(String.init) ?? "none", "apns.reason": reason,
                    "outbox.paused_until": String(until),
                ])
        }
        return sent.map { s in
            if let f = s.outcome.failure {
                switch f.classification {
                case .configuration:
                    break
                case .tokenDead(let reason):
                    let wasRetired = retired[s.delivery.id] ?? false
                    if wasRetired && s.delivery.isChannel {
                        metrics.increment(
                            "livevisits_channels_forgotten_total",
                            help: "Broadcast channels forgotten after APNs answered BadChannelId or ChannelNotRegistered.",
                            labels: ["reason": f.reason])
                        logger.info(
                            "broadcast channel forgotten: APNs no longer knows it",
                            [
                                "apns.reason": f.reason, "apns.channel_id": s.push.channelId ?? "-",
                                "outbox.delivery_id": String(s.delivery.id), "visit.id": s.delivery.visitId,
                            ])
                    } else if wasRetired {
                        metrics.increment(
                            "livevisits_outbox_tokens_retired_total", help: "Push tokens retired after APNs refused them.",
                            labels: ["reason": f.reason])
                        logger.info(
                            "push token retired",
                            [
                                "apns.reason": f.reason, "apns.token": Logger.fingerprint(s.push.deviceToken),
                                "outbox.delivery_id": String(s.delivery.id), "visit.id": s.delivery.visitId,
                            ])
                    }
                    if reason == .badDeviceToken { environmentMixup(s) }
                case .retryable, .permanent: break
                }
            } else if configurationFailure == nil {
                pause.accepted()
                setAlert(false)
            }
            var completion = DeliveryPolicy.completion(
                of: s.delivery, outcome: s.outcome, sentPriority: s.push.priority.rawValue, attemptedAt: s.attemptedAt,
                now: now,
                tokenRetired: retired[s.delivery.id] ?? false, configuration: configuration,
                random: Double.random(in: 0...1))
            completion.channelId = s.push.channelId
            return completion
        }
    }

    /// The answers as the outbox judges them. `DeviceTokenNotForTopic` retires its token, but once
    /// `topicAlertThreshold` came within `topicAlertWindowSeconds` our topic is the likelier culprit
    /// (contract §5): from that answer on each one is a configuration error — the token is kept and the
    /// delivery waits out the pause, not aged out — instead of retiring a whole batch of good tokens.
    private func judged(_ sent: [Sent], now: Double) -> [Sent] {
        sent.map { s in
            guard var f = s.outcome.failure, f.classification == .tokenDead(.notForTopic), pause.notForTopic(now: now) else {
                return s
            }
            f.classification = .configuration
            return Sent(
                delivery: s.delivery, push: s.push, outcome: .failed(f), attemptedAt: s.attemptedAt, answeredAt: s.answeredAt,
                topicLooksWrong: true)
        }
    }

    /// A 400 BadDeviceToken: the token is retired, but most often it is right and was registered for the
    /// other APNs environment (a development build's token sent to production, or the reverse). Counted by
    /// the environment it was sent to, so a spike after a release points at the app's `environment`.
    private func environmentMixup(_ s: Sent) {
        let environment = s.push.environment.rawValue
        metrics.increment(
            "livevisits_apns_environment_mixups_total",
            help: "APNs BadDeviceToken answers (likely sandbox/production mix-ups) by the environment the token was sent to.",
            labels: ["environment": environment])
        logger.warning(
            "APNs refused a token as BadDeviceToken: likely registered for the other environment",
            [
                "apns.environment": environment, "apns.token": Logger.fingerprint(s.push.deviceToken),
                "outbox.delivery_id": String(s.delivery.id), "visit.id": s.delivery.visitId,
            ])
    }

    // MARK: channels

    /// Contract §7: a channel whose `end` broadcast APNs acknowledged is ended, and deleted at APNs
    /// `channelDeleteAfterEndSeconds` later (by `ChannelMaintenance`). One small statement, only for a batch
    /// that had such an end; the claim and complete statements are not touched.
    private func channelsEnded(_ sent: [Sent], completedIds: Set<Int64>) async throws {
        let targets = sent.filter { s in
            guard case .accepted = s.outcome else { return false }
            return s.delivery.isChannel && s.delivery.kind == .end && completedIds.contains(s.delivery.id)
        }.map(\.delivery.target)
        guard !targets.isEmpty else { return }
        let now = clock.now()
        let after = configuration.channelDeleteAfterEndSeconds
        try await uncancelled {
            try await self.pool.withConnection {
                try ChannelStore.ended(targets: targets, now: now, deleteAfter: after, on: $0)
            }
        }
    }

    // MARK: leases

    private func reapIfDue() async throws {
        let now = clock.now()
        guard reapSchedule.claim(now: now, interval: configuration.reapIntervalSeconds) else { return }
        let grace = configuration.startGraceSeconds
        let reaped = try await pool.withConnection {
            try OutboxStore.reapExpiredLeases(now: now, startGraceSeconds: grace, on: $0)
        }
        if reaped > 0 {
            logger.warning("reclaimed deliveries whose worker's lease ran out", ["outbox.count": String(reaped)])
        }
    }

    // MARK: renewal and lapse

    /// Every `renewalIntervalSeconds` (a few seconds, so within 10 s of due whatever `activityRenewalSeconds`
    /// is), looks whether a Live Activity reached `activityRenewalSeconds` or its lifetime (one probe each, no
    /// transaction) and if so, in one transaction: renews those the ledger says are renewed — the claim (one
    /// UPDATE, so no two workers renew one activity), then per visit still active the `end` to each, its
    /// retirement (`renewed`: nothing more goes to it but that end) and the `start` to its device — and lapses
    /// the live activities whose lifetime ran out (those not renewed: no push-to-start token, or the visit's
    /// cap reached).
    /// A failed pass is logged and tried again at the next interval; it never holds up the deliveries.
    private func renewIfDue() async {
        let now = clock.now()
        guard renewalSchedule.claim(now: now, interval: configuration.renewalIntervalSeconds) else { return }
        do {
            try await renewAndLapse(now: now)
        } catch {
            logger.warning("live activity renewal pass failed; trying again later", ["error": "\(error)"])
        }
    }

    private func renewAndLapse(now: Double) async throws {
        let ledger = self.ledger
        let renewer = self.renewer
        let outbox = Outbox(pool: pool, configuration: configuration, clock: clock)
        let limit = configuration.batchSize
        let (renewalDue, lapseDue) = try await pool.withConnection { c in
            let renewalDue = try renewer != nil && ledger.renewalDue(now: now, on: c)
            return (renewalDue, try ledger.lapseDue(now: now, on: c))
        }
        guard renewalDue || lapseDue else { return }
        let (renewed, lapsed) = try await pool.withTransaction { c -> (Int, Int) in
            var renewed = 0
            if let renewer, renewalDue {
                let due = try ledger.claimRenewals(now: now, limit: limit, on: c)
                for (visit, activities) in Dictionary(grouping: due, by: \.visitId).sorted(by: { $0.key < $1.key }) {
                    guard let renewal = try renewer.renewal(visitId: visit, now: now, on: c) else { continue }
                    let devices = try ledger.pushToStartDevices(customerId: renewal.customerId, on: c)
                    let renewing = activities.filter { ledger.renews($0, devices: devices) }
                        .sorted { $0.activityId < $1.activityId }
                    guard !renewing.isEmpty else { continue }
                    try outbox.enqueue(
                        renewing.map { activity in
                            var end = renewal.end
                            end.audience = .activity(activity.activityId)
                            return end
                        }, on: c)
                    try ledger.retireEnding(
                        visitId: visit, activityIds: renewing.map(\.activityId), as: .renewed, on: c)
                    // The end first: the starts are due a second later, never in the same batch as the ends.
                    try outbox.enqueue(
                        renewing.map { activity in
                            var start = renewal.start
                            start.audience = .renewalStart(key: activity.activityId, device: activity.deviceId)
                            start.notBefore = now + 1
                            return start
                        }, on: c)
                    renewed += renewing.count
                }
            }
            let lapsed = lapseDue ? try ledger.lapse(now: now, limit: limit, on: c) : 0
            return (renewed, lapsed)
        }
        if renewed > 0 {
            outbox.committed()
            metrics.increment(
                "livevisits_activities_renewed_total",
                help: "Live Activities renewed at activityRenewalSeconds: an end, then a start to push-to-start tokens.",
                by: Double(renewed))
            logger.info("renewed live activities before iOS's 8 hours", ["outbox.count": String(renewed)])
        }
        if lapsed > 0 {
            metrics.increment(
                "livevisits_activities_lapsed_total",
                help: "Live Activities that lapsed: not renewed before their lifetime (iOS's 8 hours) ran out.",
                by: Double(lapsed))
            logger.info("live activities lapsed without renewal", ["outbox.count": String(lapsed)])
        }
    }

    // MARK: metrics

    private func setAlert(_ raised: Bool) {
        metrics.set(
            "livevisits_outbox_config_alert", help: "1 while sending is paused by an APNs configuration error.",
            to: raised ? 1 : 0)
    }

    private static let delayBuckets: [Double] = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 3600]

    private func record(_ completions: [DeliveryCompletion], sent: [Sent], completedIds: Set<Int64>) {
        let help = "Outbox send attempts by result."
        for s in sent {
            let result: String
            switch s.outcome {
            case .accepted:
                result = "sent"
                if completedIds.contains(s.delivery.id) {
                    metrics.observe(
                        "livevisits_push_delay_seconds", help: "Seconds from the event's append to APNs's acknowledgement.",
                        value: max(0, s.answeredAt - s.delivery.eventRecordedAt), buckets: OutboxWorker.delayBuckets)
                }
            case .failed(let f):
                result = f.classification.label
            }
            metrics.increment("livevisits_outbox_attempts_total", help: help, labels: ["result": result])
            if s.delivery.isChannel {
                metrics.increment(
                    "livevisits_channel_broadcasts_total", help: "Broadcasts to channels by result.",
                    labels: ["status": result])
            }
        }
        for c in completions where completedIds.contains(c.id) && c.state.isFinal {
            metrics.increment(
                "livevisits_outbox_finished_total", help: "Deliveries reaching a final state.",
                labels: ["state": c.state.rawValue])
            if c.state == .dead {
                logger.warning(
                    "delivery dead-lettered",
                    [
                        "outbox.delivery_id": String(c.id), "apns.status": c.status.map(String.init) ?? "none",
                        "apns.reason": c.reason ?? "",
                    ])
            }
        }
        let fenced = completions.filter { !completedIds.contains($0.id) }.count
        if fenced > 0 {
            logger.warning("lease lost before completion; results left to the new owner", ["outbox.count": String(fenced)])
        }
    }
}
