/// The state requests `TrackingCards` holds, found by what releases them: their visit's card changing, their
/// link being dropped, their deadline passing. Each release touches only the requests it releases, so ten
/// thousand held pages cost nothing while nothing happens to them (a filter over all of them, under the
/// memory's lock, on every pass and every sweep, made the held pages' own requests wait on that lock).
///
/// Not thread-safe: it lives inside the memory's lock.
struct HeldRequests<Waiter> {
    private struct Entry {
        let visitId: String
        let tokenHash: String
        let waiter: Waiter
    }

    private var entries: [UInt64: Entry] = [:]
    private var byVisit: [String: Set<UInt64>] = [:]
    private var byToken: [String: Set<UInt64>] = [:]
    /// Ids in the order they were added, with their deadlines. Every hold lasts the same time, so this is also
    /// the order of the deadlines (a clock set back releases late, never early). Released ids stay here until
    /// the front passes them.
    private var deadlines: [(deadline: Double, id: UInt64)] = []
    private var front = 0

    /// How many requests are held.
    var count: Int { entries.count }

    /// The visits some held request waits on.
    var visitIds: Dictionary<String, Set<UInt64>>.Keys { byVisit.keys }

    mutating func add(_ id: UInt64, visitId: String, tokenHash: String, deadline: Double, waiter: Waiter) {
        entries[id] = Entry(visitId: visitId, tokenHash: tokenHash, waiter: waiter)
        byVisit[visitId, default: []].insert(id)
        byToken[tokenHash, default: []].insert(id)
        deadlines.append((deadline, id))
    }

    /// The request `id`, no longer held (nil when it was released already).
    mutating func remove(_ id: UInt64) -> Waiter? {
        guard let entry = entries.removeValue(forKey: id) else { return nil }
        Self.unindex(id, under: entry.visitId, in: &byVisit)
        Self.unindex(id, under: entry.tokenHash, in: &byToken)
        return entry.waiter
    }

    /// The requests waiting on any of `visits`.
    mutating func remove(visits: some Sequence<String>) -> [Waiter] {
        var released: [Waiter] = []
        for visit in visits {
            guard let ids = byVisit.removeValue(forKey: visit) else { continue }
            for id in ids { if let waiter = remove(id) { released.append(waiter) } }
        }
        return released
    }

    /// The requests asking through the link `tokenHash`.
    mutating func remove(tokenHash: String) -> [Waiter] {
        guard let ids = byToken.removeValue(forKey: tokenHash) else { return [] }
        return ids.compactMap { remove($0) }
    }

    /// The requests whose deadline is `now` or earlier.
    mutating func removeDue(at now: Double) -> [Waiter] {
        var released: [Waiter] = []
        while front < deadlines.count, deadlines[front].deadline <= now {
            if let waiter = remove(deadlines[front].id) { released.append(waiter) }
            front += 1
        }
        if front > 1024, front * 2 > deadlines.count {
            deadlines.removeFirst(front)
            front = 0
        }
        return released
    }

    /// Every held request.
    mutating func removeAll() -> [Waiter] {
        let released = entries.values.map(\.waiter)
        self = HeldRequests()
        return released
    }

    private static func unindex(_ id: UInt64, under key: String, in index: inout [String: Set<UInt64>]) {
        index[key]?.remove(id)
        if index[key]?.isEmpty == true { index[key] = nil }
    }
}
