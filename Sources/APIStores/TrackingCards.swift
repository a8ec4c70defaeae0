import EventStore
import Foundation
import Postgres
import Runtime
import VisitDomain
import VisitProjections

/// The tracking links' memory: what open tracking pages ask for, answered without the database.
///
/// Two things are remembered. The links presented lately, token hash → visit id (`tokens`, a `ListenedCache`
/// on `TrackingLinks.channel`): a link replaced or revoked in any process is announced there with its hash in
/// the same transaction, and dropped here the moment the notification arrives — and in the process that made
/// the change at once. And the cards of those links' visits (`Card`: the read model's row, as the state answer
/// needs it), kept current by following the event log (`run()`): woken by `listener(url:)` after every commit
/// of any process, polling every `pollIntervalSeconds` without it, a pass reads the events committed since the
/// last one, gap-safely, and reads again the rows of the remembered visits they touched.
///
/// The memory answers only while it can be trusted: while the token listener listens (after a reconnect it
/// starts empty) and the last pass finished less than `trustSeconds` ago. Otherwise every look-up reads the
/// database, as one without a running memory does. So a revocation, a replacement or a lapse made anywhere
/// stops a token as soon as its notification arrives (in practice milliseconds; a link's entry lives
/// `tokenTimeToLive` at most in any case), and an event appended anywhere reaches the remembered card within
/// one pass after its commit's notification, or `pollIntervalSeconds` plus a pass without one.
///
/// A held state request (`waitForChange`) waits here, with no connection and no thread, until its visit's card
/// changes, its link is dropped, `holdSeconds` pass on `clock`, or the memory stops (`run()` returns).
public final class TrackingCards: Service {
    public let name = "tracking-cards"
    public let pool: PostgresPool
    /// Where a held request's deadline runs.
    public let clock: any WallClock
    /// How long a state request asking for a change is held at most (the route moves its request's deadline past
    /// it: see `RequestDeadline`).
    public let holdSeconds: Double
    /// How often the log is read without a notification.
    public let pollIntervalSeconds: Double
    /// The least time between two reads of the log: under a steady stream of commits, one pass takes in what
    /// several notifications announced.
    public let minimumPassSeconds: Double
    /// How old the last finished pass may be for the memory to answer.
    public let trustSeconds: Double
    /// A card nobody asked for in this long is forgotten.
    public let idleSeconds: Double
    /// The most cards remembered; past it, new links are answered from the database.
    public let capacity: Int
    /// The most requests held at once; past it, a request asking for a change is answered at once. Each held
    /// request keeps a connection open, so the HTTP server's connection limit bounds them first.
    public let maximumHeld: Int
    /// Signalled by `listener(url:)`: events were committed.
    public let wakeUp = WakeUp()
    private let logger = Logger(label: "tracking-cards")

    /// How long a state request is held by default. An open page asks about once per hold while nothing changes,
    /// so the hold sets what ten thousand quiet pages cost (400 requests a second at 25 s); browsers and
    /// proxies keep a quiet request open far longer.
    public static let defaultHoldSeconds = 25.0
    /// How long a link's entry is trusted at most, notifications or not.
    public static let tokenTimeToLive = Duration.seconds(300)

    /// A visit's card as the state answer draws it, and when it was last asked for (`ContinuousClock`).
    struct Card {
        var shown: TrackingLinks.Shown
        var asked: ContinuousClock.Instant
    }

    private struct Memory {
        var cards: [String: Card] = [:]
        /// Visits whose rows the next pass reads again (remembered from a read that a pass may have missed).
        var unsure: Set<String> = []
        var checkpoint: Checkpoint?
        var lastPass: ContinuousClock.Instant?
        /// Passes finished so far.
        var passes = 0
        var stopped = false
        var lastSweep = ContinuousClock.now
        var held = HeldRequests<CheckedContinuation<Void, Never>>()
        var nextWaiter: UInt64 = 0
    }

    /// The memory, in a box of its own so that the link cache's callback can hold it before `self` exists.
    private final class Box: Sendable {
        let memory = Lock(Memory())
    }
    private let box = Box()
    /// Token hash → visit id, of links presented lately.
    private let tokens: ListenedCache<String>

    public init(
        pool: PostgresPool, clock: any WallClock = SystemClock(), holdSeconds: Double = TrackingCards.defaultHoldSeconds,
        pollIntervalSeconds: Double = 0.5,
        minimumPassSeconds: Double = 0.1, trustSeconds: Double = 5, idleSeconds: Double = 120, capacity: Int = 200_000,
        maximumHeld: Int = 100_000
    ) {
        self.maximumHeld = maximumHeld
        self.pool = pool
        self.clock = clock
        self.holdSeconds = holdSeconds
        self.pollIntervalSeconds = pollIntervalSeconds
        self.minimumPassSeconds = minimumPassSeconds
        self.trustSeconds = trustSeconds
        self.idleSeconds = idleSeconds
        self.capacity = capacity
        let box = self.box
        self.tokens = ListenedCache(
            channel: TrackingLinks.channel, timeToLive: Self.tokenTimeToLive, capacity: capacity,
            forgotten: { hash in
                TrackingCards.release(box) { held in hash.map { held.remove(tokenHash: $0) } ?? held.removeAll() }
            })
    }

    /// The LISTEN services: the links' changes (which the memory needs to answer at all) and the events'
    /// commits (which make a pass start at once). Run both next to `self`.
    public func listeners(url: String) -> [PostgresListener] {
        [
            tokens.listener(url: url),
            PostgresListener(url: url, channels: [EventStore.channel]) { [wakeUp] _, _ in wakeUp.signal() },
        ]
    }

    /// How many passes over the log have finished (for tests that must know one began after a change).
    public var passesFinished: Int { box.memory.withLock { $0.passes } }

    /// Whether the memory answers now.
    public var isServing: Bool {
        guard tokens.isActive else { return false }
        let trust = Duration.seconds(trustSeconds)
        return box.memory.withLock { m in
            guard !m.stopped, let last = m.lastPass else { return false }
            return ContinuousClock.now - last < trust
        }
    }

    /// How many cards are remembered.
    public var count: Int { box.memory.withLock { $0.cards.count } }

    /// The remembered card behind a token hash, if the memory answers and holds both.
    func card(tokenHash: String) -> TrackingLinks.Shown? {
        guard isServing, let visitId = tokens.value(tokenHash) else { return nil }
        let now = ContinuousClock.now
        return box.memory.withLock { m -> TrackingLinks.Shown? in
            guard m.cards[visitId] != nil else { return nil }
            m.cards[visitId]?.asked = now
            return m.cards[visitId]?.shown
        }
    }

    /// Take this before reading a link's row from the database; pass it to `remember`.
    func generation() -> UInt64 { tokens.generation() }

    /// Remembers a link and its card read from the database (unless a link was dropped since `generation`);
    /// the next pass reads the card again, since a pass that ran meanwhile may have missed it.
    func remember(tokenHash: String, card: TrackingLinks.Shown, readAt generation: UInt64) {
        guard isServing else { return }
        let stored = box.memory.withLock { m -> Bool in
            let visitId = card.state.visitId
            if let known = m.cards[visitId] {
                if known.shown.state.version < card.state.version { m.cards[visitId]?.shown = card }
            } else {
                guard m.cards.count < capacity else { return false }
                m.cards[visitId] = Card(shown: card, asked: .now)
            }
            m.unsure.insert(visitId)
            return true
        }
        if stored { tokens.remember(CollectionOfOne((id: tokenHash, value: card.state.visitId)), readAt: generation) }
    }

    /// Drops a link (replaced or revoked by this process: the others hear it on the channel), waking its held
    /// requests.
    func forget(tokenHash: String) { tokens.forget(tokenHash) }

    /// Waits until the visit's card is newer than `version`, the link is dropped, `holdSeconds` pass or the
    /// memory stops; at once when the memory does not answer now. The caller looks the token up again.
    func waitForChange(visitId: String, tokenHash: String, beyond version: Int) async {
        guard isServing else { return }
        let deadline = clock.now() + holdSeconds
        let id = box.memory.withLock { m -> UInt64 in
            m.nextWaiter += 1
            return m.nextWaiter
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let held = box.memory.withLock { m -> Bool in
                    guard !m.stopped, !Task.isCancelled, m.held.count < maximumHeld, let card = m.cards[visitId],
                        card.shown.state.version <= version
                    else { return false }
                    m.held.add(id, visitId: visitId, tokenHash: tokenHash, deadline: deadline, waiter: continuation)
                    return true
                }
                if !held { continuation.resume() }
            }
        } onCancel: {
            box.memory.withLock { $0.held.remove(id) }?.resume()
        }
    }

    /// How many requests are held now.
    public var holding: Int { box.memory.withLock { $0.held.count } }

    /// Resumes the held requests `which` takes out, outside the lock.
    private static func release(
        _ box: Box, _ which: (inout HeldRequests<CheckedContinuation<Void, Never>>) -> [CheckedContinuation<Void, Never>]
    ) {
        let released = box.memory.withLock { which(&$0.held) }
        for continuation in released { continuation.resume() }
    }

    // MARK: following the log

    /// Follows the log until cancelled, then releases every held request. A failed pass (the database away) is
    /// tried again on the next wake-up or poll; meanwhile the memory stops answering once `trustSeconds` pass.
    public func run() async throws {
        box.memory.withLock { $0.stopped = false }
        await withTaskGroup(of: Void.self) { group in
            // Held requests are released on their deadline on a timer of their own, however long a pass takes.
            group.addTask { [self] in
                while !Task.isCancelled {
                    try? await Task.sleep(nanoseconds: UInt64(Self.sweepSeconds * 1_000_000_000))
                    sweep()
                }
            }
            group.addTask { [self] in
                var reported = false
                while !Task.isCancelled {
                    do {
                        try await pass()
                        reported = false
                    } catch {
                        if !reported {
                            logger.warning("cannot follow the event log; answering from the database", ["error": "\(error)"])
                        }
                        reported = true
                    }
                    try? await Task.sleep(nanoseconds: UInt64(minimumPassSeconds * 1_000_000_000))
                    _ = await wakeUp.wait(upTo: pollIntervalSeconds)
                }
            }
            await group.waitForAll()
        }
        box.memory.withLock {
            $0.stopped = true
            $0.cards = [:]
            $0.checkpoint = nil
        }
        Self.release(box) { $0.removeAll() }
    }

    /// How often held requests past their deadline are released. Often, so that they end in small groups: a
    /// page asks again as soon as it is answered, and a sweep every quarter second made bursts of a hundred
    /// answers and new requests that the requests arriving meanwhile waited behind.
    static let sweepSeconds = 0.02

    /// One pass: from where the log ends the first time; afterwards the events committed since the last pass,
    /// and the rows of the remembered visits they touched (and of the unsure ones).
    func pass() async throws {
        let (checkpoint, unsure) = box.memory.withLock { m in
            defer { m.unsure = [] }
            return (m.checkpoint, m.unsure)
        }
        do {
            let (at, read) = try await pool.withConnection { [box] c -> (Checkpoint, [String: TrackingLinks.Shown?]) in
                guard let checkpoint else { return (try EventStore.head(on: c), [:]) }
                var touched = unsure
                let at = try EventStore.changes(after: checkpoint, on: c) { events in
                    touched.formUnion(Self.cardsBehind(events.map { ($0.streamName, $0.position) }, in: box))
                }
                // Events committed behind a transaction still open elsewhere in the cluster (a long report, a
                // dump, another database's work) are not in the log's order yet, but their visits' rows are
                // current: read those of remembered cards now, or the page would wait for that transaction. (With
                // them come any committed since the read above: `eventsNotYetFollowed`.)
                let behind = try EventStore.eventsNotYetFollowed(after: at, limit: 1000, on: c)
                touched.formUnion(Self.cardsBehind(behind.map { ($0.streamName, $0.position) }, in: box))
                var read: [String: TrackingLinks.Shown?] = [:]
                if !touched.isEmpty {
                    for id in touched { read[id] = .some(nil) }
                    for card in try TrackingLinks.cards(visitIds: Array(touched), on: c) { read[card.state.visitId] = card }
                }
                return (at, read)
            }
            let changed = box.memory.withLock { m -> Set<String> in
                var changed = Set<String>()
                for (id, card) in read {
                    guard let known = m.cards[id] else { continue }
                    if let card {
                        guard card.state.version > known.shown.state.version else { continue }
                        m.cards[id]?.shown = card
                    } else {
                        m.cards[id] = nil
                    }
                    changed.insert(id)
                }
                m.checkpoint = at
                m.lastPass = .now
                m.passes += 1
                return changed
            }
            if !changed.isEmpty { Self.release(box) { $0.remove(visits: changed) } }
        } catch {
            box.memory.withLock { $0.unsure.formUnion(unsure) }
            throw error
        }
    }

    /// The remembered visits whose card is older than one of `events`.
    private static func cardsBehind(_ events: [(streamName: String, position: Int64)], in box: Box) -> Set<String> {
        box.memory.withLock { m in
            Set(
                events.compactMap { event -> String? in
                    guard let id = VisitReadModel.visitId(ofStream: event.streamName), let known = m.cards[id],
                        Int(event.position) > known.shown.state.version
                    else { return nil }
                    return id
                })
        }
    }

    /// Releases the held requests past their deadline, and forgets cards nobody asked for lately.
    private func sweep() {
        let now = clock.now()
        Self.release(box) { $0.removeDue(at: now) }
        let idle = ContinuousClock.now - .seconds(idleSeconds)
        box.memory.withLock { m in
            guard ContinuousClock.now - m.lastSweep > .seconds(10) else { return }
            m.lastSweep = .now
            m.cards = m.cards.filter { $0.value.asked > idle || m.held.visitIds.contains($0.key) }
        }
    }
}
