import Postgres
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

    public var timeToLive: Duration { rows.timeToLive }
    /// More keys than this and the cache starts over.
    public var capacity: Int { rows.capacity }

    /// Reads of keys not cached, waiting for the one on the wire (`read`).
    private let reads = Mutex(Reads())
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
    public init(timeToLive: Duration = .seconds(3_600), capacity: Int = 50_000) {
        rows = ListenedCache(channel: PersonalDataKeys.erasureChannel, timeToLive: timeToLive, capacity: capacity)
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
    func generation() -> UInt64 { rows.generation() }

    /// Remembers keys read from the database, unless a key was forgotten since `generation` (the rows may
    /// predate an erasure whose notification has already been handled).
    func remember(_ keys: some Collection<PersonalDataKeys.DataKey>, readAt generation: UInt64) {
        rows.remember(keys.map { (id: $0.id, value: $0) }, readAt: generation)
    }

    /// Drops one key (it was destroyed).
    public func forget(_ keyId: String) { rows.forget(keyId) }

    /// Drops every key.
    public func forgetAll() { rows.forgetAll() }

    /// The LISTEN service that forgets keys as they are destroyed (and everything after a reconnect, or on
    /// an empty payload); run it in the process's service group. Until it listens, the cache stays unused.
    public func listener(url: String) -> PostgresListener { rows.listener(url: url) }
}
