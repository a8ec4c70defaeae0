import Postgres
import Runtime
import Synchronization

/// Customers' data keys recently read and unwrapped, so that opening an answer (or a start push) does not
/// pay a pooled round trip to `personal_data_keys` and an unwrap for every key it names. Only keys that
/// exist are remembered (an erased or unreadable key is read again every time), for `timeToLive` at most,
/// `capacity` of them at most (more, and the cache starts over).
///
/// Erasure stays immediate in every process, as revocation does for `APIKeyCache`: `PersonalDataKeys.destroy`
/// announces the destroyed key id on `PersonalDataKeys.erasureChannel` in the erasing transaction, and
/// `listener(url:)` (a service of every process that opens personal data) drops it here the moment the
/// notification arrives. The cache is only used while that listener is listening: without one, while it
/// reconnects, and after it reconnected (notifications may have been missed, so it forgets everything)
/// every answer reads the database.
public final class PersonalDataKeyCache: Sendable {
    /// The keys, heard from `PersonalDataKeys.erasureChannel` (some 200 bytes a key).
    private let rows: ListenedCache<PersonalDataKeys.DataKey>
    /// Sealed values opened lately, as answers write them (`openedValues(_:)`): forgotten with their key.
    private let opened: OpenedValues

    public var timeToLive: Duration { rows.timeToLive }
    /// More keys than this and the cache starts over.
    public var capacity: Int { rows.capacity }

    /// Reads of keys not cached, waiting for the one on the wire (`read`).
    private let reads = Lock(Reads())
    /// Queries `read` has made (for tests).
    let queriesMade = Atomic<Int>(0)

    private struct Reads {
        var onTheWire = false
        var waiting: [Waiter] = []
    }

    private struct Waiter {
        let ids: [String]
        let continuation: CheckedContinuation<Result<PersonalDataKeys.Read, any Error>, Never>
    }

    /// An hour and 50,000 keys (some 10 MB): a customer's data key never changes while it exists (a rotation
    /// rewraps it and then clears every cache by notification; an erasure drops it by notification), so the
    /// time to live only bounds what a missed notification could leave. Shorter, the keys of customers whose
    /// answers come minutes apart — 10,000 open tracking pages, a fleet's boards — were read again at nearly
    /// every answer: with 60 s and 10,000 keys, a tracking page's plain ask waited for a key read.
    ///
    /// `openedCapacity` sealed values (some 250 bytes each) are kept opened: a console's board opens the same
    /// four hundred values every two seconds, and the worker the same few of a visit for each of its pushes.
    public init(timeToLive: Duration = .seconds(3_600), capacity: Int = 50_000, openedCapacity: Int = 20_000) {
        let opened = OpenedValues(timeToLive: timeToLive, capacity: openedCapacity)
        self.opened = opened
        rows = ListenedCache(
            channel: PersonalDataKeys.erasureChannel, timeToLive: timeToLive, capacity: capacity,
            forgotten: { opened.forget(keyId: $0) })
    }

    /// Reads the keys `ids` on a connection of `pool`, together with every other read asked for meanwhile:
    /// while one read is on the wire the others wait, then go as one query. Answers whose customers were never
    /// seen (a burst of visits outside the cache, each of its own customer) then cost a round trip a batch,
    /// not one each. The reads go through the pool of the call that finds none on the wire.
    func read(_ ids: [String], keys: PersonalDataKeys, pool: PostgresPool) async throws -> PersonalDataKeys.Read {
        let result = await withCheckedContinuation { continuation in
            let leads = reads.withLock { state -> Bool in
                state.waiting.append(Waiter(ids: ids, continuation: continuation))
                guard !state.onTheWire else { return false }
                state.onTheWire = true
                return true
            }
            if leads { Task { await self.readWaiting(keys: keys, pool: pool) } }
        }
        return try result.get()
    }

    /// Reads for the waiting calls, a batch at a time, until none waits.
    private func readWaiting(keys: PersonalDataKeys, pool: PostgresPool) async {
        while true {
            let batch = reads.withLock { state -> [Waiter] in
                let batch = state.waiting
                state.waiting = []
                if batch.isEmpty { state.onTheWire = false }
                return batch
            }
            guard !batch.isEmpty else { return }
            let ids = Array(Set(batch.flatMap(\.ids)))
            queriesMade.add(1, ordering: .relaxed)
            let result: Result<PersonalDataKeys.Read, any Error>
            do {
                result = .success(try await pool.withConnection { try keys.dataKeys(ids: ids, on: $0) })
            } catch {
                result = .failure(error)
            }
            for waiter in batch {
                waiter.continuation.resume(
                    returning: result.map { read in
                        let wanted = Set(waiter.ids)
                        return (read.keys.filter { wanted.contains($0.key) }, read.unreadable.filter { wanted.contains($0.key) })
                    })
            }
        }
    }

    /// True while erasures can be heard.
    public var isActive: Bool { rows.isActive }

    /// How many keys are remembered now (for tests and the benchmark).
    public var count: Int { rows.count }

    /// The cached keys among `ids` that have not expired (none while the listener is down).
    func keys(_ ids: some Sequence<String>) -> [String: PersonalDataKeys.DataKey] { rows.values(ids) }

    /// Take this before reading keys' rows; pass it to `remember`.
    public func generation() -> UInt64 { rows.generation() }

    /// Remembers keys read from the database (or made there by a write that committed), unless a key was
    /// forgotten since `generation` (the rows may predate an erasure whose notification has already been
    /// handled).
    public func remember(_ keys: some Collection<PersonalDataKeys.DataKey>, readAt generation: UInt64) {
        rows.remember(keys.map { (id: $0.id, value: $0) }, readAt: generation)
    }

    /// Take this before looking up the keys of values to open; pass it to `rememberOpened`.
    func openedGeneration() -> UInt64 { opened.generation() }

    /// What each of `texts` (sealed values, their field's kind beside them) was opened to lately, as answers
    /// write it; nil where not remembered, and all nil while erasures cannot be heard.
    func openedValues(_ texts: [(text: String, isJSON: Bool)]) -> [[UInt8]?] {
        guard rows.isActive else { return Array(repeating: nil, count: texts.count) }
        return opened.values(texts)
    }

    /// Remembers values opened with keys looked up after `generation` was taken, unless a key was forgotten
    /// since (the value may have been opened with a key erased meanwhile).
    func rememberOpened(_ values: [(text: String, isJSON: Bool, bytes: [UInt8])], readAt generation: UInt64) {
        guard rows.isActive else { return }
        opened.remember(values, readAt: generation)
    }

    /// How many opened values are remembered now (for tests).
    var openedCount: Int { opened.count }

    /// Drops one key (it was destroyed).
    public func forget(_ keyId: String) { rows.forget(keyId) }

    /// Drops every key.
    public func forgetAll() { rows.forgetAll() }

    /// The LISTEN service that forgets keys as they are destroyed (and everything after a reconnect, or on
    /// an empty payload); run it in the process's service group. Until it listens, the cache stays unused.
    public func listener(url: String) -> PostgresListener { rows.listener(url: url) }
}

/// Sealed values and what they opened to, as an answer writes it (a JSON string, or the JSON document of a
/// `location`), so that an answer read again — a console's board every two seconds, a visit's next push —
/// does not decode, look up and decrypt each value again. A sealed value names its key and never changes,
/// so what it opens to can only change by its key being destroyed: the key cache forgets a destroyed key
/// (`ListenedCache`'s `forgotten`), and with it every value it opened here, in the same moment. Entries
/// end with the keys' time to live too, and at `capacity` values the memory starts again empty.
final class OpenedValues: Sendable {
    private struct Entry {
        let isJSON: Bool
        let bytes: [UInt8]
        let expires: ContinuousClock.Instant
    }

    private struct Memory {
        var byText: [String: Entry] = [:]
        /// Moves on every forget: a value opened before it is not remembered after it.
        var generation: UInt64 = 0
    }

    private let memory = Lock(Memory())
    let timeToLive: Duration
    let capacity: Int

    init(timeToLive: Duration, capacity: Int) {
        self.timeToLive = timeToLive
        self.capacity = capacity
    }

    var count: Int { memory.withLock { $0.byText.count } }

    func generation() -> UInt64 { memory.withLock { $0.generation } }

    func values(_ texts: [(text: String, isJSON: Bool)]) -> [[UInt8]?] {
        let now = ContinuousClock.now
        return memory.withLock { memory in
            texts.map { asked in
                guard let entry = memory.byText[asked.text], entry.isJSON == asked.isJSON, entry.expires > now else { return nil }
                return entry.bytes
            }
        }
    }

    func remember(_ values: [(text: String, isJSON: Bool, bytes: [UInt8])], readAt generation: UInt64) {
        guard !values.isEmpty, capacity > 0, timeToLive > .zero else { return }
        let expires = ContinuousClock.now + timeToLive
        memory.withLock { memory in
            guard memory.generation == generation else { return }
            if memory.byText.count + values.count > capacity { memory.byText.removeAll(keepingCapacity: true) }
            for value in values.prefix(capacity) {
                memory.byText[value.text] = Entry(isJSON: value.isJSON, bytes: value.bytes, expires: expires)
            }
        }
    }

    /// Drops the values opened with `keyId` (every value when nil).
    func forget(keyId: String?) {
        let prefix = keyId.map { Array((SealedText.prefix + $0 + ":").utf8) }
        memory.withLock { memory in
            memory.generation &+= 1
            guard let prefix else { return memory.byText.removeAll() }
            memory.byText = memory.byText.filter { !$0.key.utf8.starts(with: prefix) }
        }
    }
}
