import EventStore
import Foundation
import Postgres
import Runtime
import VisitProjections

/// The technicians' days (`GET /v1/technicians?date=`) kept in memory, each brought up to date from the event
/// log before it is answered.
///
/// Read whole from the technicians read model, a fleet's day is tens of thousands of rows (about 100 ms beside
/// a busy fleet for 10,000 technicians), and the dispatch desk's pages ask for it every 2 seconds while the
/// fleet changes it many times a second. So a day asked for is read whole once, with the log's
/// checkpoint taken just before; every later ask first runs a pass that reads the events committed since
/// (gap-safely, `EventStore.changes(after:)`, and those still behind the snapshot horizon), reads again the
/// rows of the visits they touched and the names of those visits' technicians, and updates the day. A pass
/// starts only after the ask came, so an answer shows everything committed before it was asked for, by any
/// process. One pass runs at a time and serves every ask that came before it started.
///
/// A day is read whole again when the read model's table was replaced (`livevisits replay technicians`, a
/// rebuild) or when more visits changed than `reloadAbove`. A day nobody asked for in `idleSeconds` is
/// forgotten. Nothing is kept but what the table holds: no personal field.
public final class TechnicianDays: Sendable {
    public let pool: PostgresPool
    /// A day not asked for this long is forgotten, and no longer followed.
    public static let idleSeconds = 300.0
    /// More changed visits than this in one pass: the day is read whole again instead.
    static let reloadAbove = 5_000

    /// One visit of a day, with its technician.
    struct Entry: Sendable {
        var technicianId: String
        var visit: TechnicianReadModel.Visit
    }

    typealias Person = TechnicianReadModel.Person

    /// One day as it stood at `checkpoint` (and the events behind the horizon then), with its answer.
    struct Day: Sendable {
        var from: Int64
        var to: Int64
        /// The read model's table this day was read from (its oid): a replay replaces it.
        var table: Int64
        var checkpoint: Checkpoint
        var entries: [String: Entry] = [:]
        var visitsByTechnician: [String: Set<String>] = [:]
        var people: [String: Person] = [:]
        /// Each technician's element of the answer, as written at the last `refresh()`.
        var fragments: [String: [UInt8]] = [:]
        /// Technicians whose element is to be written again.
        var changed: Set<String> = []
        /// The technicians in the answer's order (by name then id, as `TechnicianReadModel.precedes`), their
        /// elements as of the last `refresh()` beside them, and the name each was placed under. A technician who
        /// comes, goes or is renamed is taken out or put in at its place by a binary search: sorting the whole
        /// day again took 8 ms on a quiet core for 10,000 technicians and 60 ms beside a busy fleet, in the
        /// pass every ask waits for.
        var order: [String] = []
        var inOrder: [[UInt8]] = []
        var placedName: [String: String] = [:]
        /// Technicians to be placed in the order at the next `refresh()`.
        var unplaced: Set<String> = []
        /// The order is to be sorted whole at the next `refresh()`: a day read whole, or a technician not found
        /// where its name put it (names that compare equal but are spelled apart could do that).
        var unsorted = true
        /// The answer as of the last `refresh()`, written anew at each that changed it: answers being sent
        /// still hold the one before.
        var answer = Data()
        /// More technicians to place than this: the whole order is sorted again instead (the first read).
        static let sortAbove = 256
        /// How often the whole order was sorted (for tests).
        var sorts = 0

        mutating func remove(_ visitId: String) {
            guard let old = entries.removeValue(forKey: visitId) else { return }
            changed.insert(old.technicianId)
            visitsByTechnician[old.technicianId]?.remove(visitId)
            if visitsByTechnician[old.technicianId]?.isEmpty == true {
                visitsByTechnician[old.technicianId] = nil
                people[old.technicianId] = nil
                fragments[old.technicianId] = nil
                unplace(old.technicianId)
                unplaced.remove(old.technicianId)
            }
        }

        mutating func put(_ entry: Entry) {
            let id = entry.visit.visitId
            // Kept in place when its technician stays: removing it first would drop a technician's only visit,
            // and with it their name and place in the order.
            if let old = entries[id], old.technicianId != entry.technicianId { remove(id) }
            entries[id] = entry
            if visitsByTechnician[entry.technicianId] == nil { unplaced.insert(entry.technicianId) }
            visitsByTechnician[entry.technicianId, default: []].insert(id)
            changed.insert(entry.technicianId)
        }

        mutating func name(_ technicianId: String, _ person: Person) {
            guard people[technicianId] != person else { return }
            if people[technicianId]?.name != person.name, placedName[technicianId] != nil {
                unplace(technicianId)
                unplaced.insert(technicianId)
            }
            people[technicianId] = person
            changed.insert(technicianId)
        }

        /// Where `(name, id)` is or would go in `order`: the first place whose technician does not precede it.
        func place(of name: String, _ id: String) -> Int {
            var low = 0
            var high = order.count
            while low < high {
                let middle = (low + high) / 2
                let other = order[middle]
                if TechnicianReadModel.precedes((placedName[other] ?? "", other), (name, id)) {
                    low = middle + 1
                } else {
                    high = middle
                }
            }
            return low
        }

        /// Takes a technician out of the order (nothing when it is not in it).
        mutating func unplace(_ technicianId: String) {
            guard let name = placedName[technicianId] else { return }
            // (Its own name is still in `placedName` while it is searched for: the search reads every name it passes.)
            let at = placed(name, technicianId)
            placedName[technicianId] = nil
            guard let at else {
                unsorted = true
                return
            }
            order.remove(at: at)
            inOrder.remove(at: at)
        }

        /// Where a technician placed under `name` is in `order` (nil when it is not there).
        func placed(_ name: String, _ technicianId: String) -> Int? {
            let at = place(of: name, technicianId)
            return at < order.count && order[at] == technicianId ? at : nil
        }

        /// Writes the changed technicians' elements again, places those that came or were renamed, and writes
        /// the answer: technicians by name then id, their visits by window start, then end, then id (names
        /// and ids in code-point order, as the statement orders them).
        mutating func refresh() {
            guard !changed.isEmpty || !unplaced.isEmpty || unsorted else { return }
            for id in changed {
                guard let ids = visitsByTechnician[id] else { continue }
                let person = people[id] ?? Person(name: "", avatarSymbol: "", vanDescription: "")
                let visits = ids.compactMap { entries[$0]?.visit }.sorted(by: TechnicianReadModel.Visit.precedes)
                var fragment: [UInt8] = []
                TechnicianReadModel.Technician(
                    id: id, name: person.name, avatarSymbol: person.avatarSymbol, vanDescription: person.vanDescription,
                    visits: visits
                ).writeJSON(to: &fragment)
                fragments[id] = fragment
                if let name = placedName[id] {
                    if let at = placed(name, id) { inOrder[at] = fragment } else { unsorted = true }
                }
            }
            changed = []
            let coming = unplaced.filter { visitsByTechnician[$0] != nil }
            unplaced = []
            if unsorted || coming.count > Self.sortAbove {
                unsorted = false
                sorts += 1
                let keyed = visitsByTechnician.keys.map { (name: people[$0]?.name ?? "", id: $0) }
                let sorted = keyed.sorted(by: TechnicianReadModel.precedes)
                order = sorted.map(\.id)
                inOrder = order.map { fragments[$0] ?? [] }
                placedName = Dictionary(uniqueKeysWithValues: sorted.map { ($0.id, $0.name) })
            } else {
                for id in coming {
                    let name = people[id]?.name ?? ""
                    let at = place(of: name, id)
                    order.insert(id, at: at)
                    inOrder.insert(fragments[id] ?? [], at: at)
                    placedName[id] = name
                }
            }
            // Written straight into the answer's bytes, sized first: the elements are copied once, by memcpy
            // (appended to a Data one by one, each append cost more than its copy).
            let opening = Array(#"{"technicians":["#.utf8)
            let closing = Array("]}".utf8)
            let size = opening.count + inOrder.reduce(0) { $0 + $1.count } + max(inOrder.count - 1, 0) + closing.count
            var body = Data(count: size)
            body.withUnsafeMutableBytes { (out: UnsafeMutableRawBufferPointer) in
                var at = 0
                func put(_ bytes: [UInt8]) {
                    bytes.withUnsafeBytes {
                        out.baseAddress!.advanced(by: at).copyMemory(from: $0.baseAddress!, byteCount: $0.count)
                    }
                    at += bytes.count
                }
                put(opening)
                for n in inOrder.indices {
                    if n > 0 {
                        out[at] = UInt8(ascii: ",")
                        at += 1
                    }
                    if !inOrder[n].isEmpty { put(inOrder[n]) }
                }
                put(closing)
                precondition(at == size, "the day's answer fills what was sized for it")
            }
            answer = body
        }
    }

    /// Who waits for which pass: those that came while one ran wait for the next.
    enum Gate {
        case idle
        case running(current: [CheckedContinuation<Void, any Error>], next: [CheckedContinuation<Void, any Error>])
    }

    struct Memory {
        /// The days being followed; taken out while a pass runs.
        var days: [Int64: Day] = [:]
        /// Each day's answer as of the last pass, by its start: what asks read.
        var answers: [Int64: (to: Int64, body: Data)] = [:]
        /// When each day was last asked for, by its start.
        var asked: [Int64: (to: Int64, at: ContinuousClock.Instant)] = [:]
        var gate = Gate.idle
        /// Passes run and days read whole, for tests and the benchmark.
        var passes = 0
        var loads = 0
    }

    private let memory = Lock(Memory())

    public init(pool: PostgresPool) {
        self.pool = pool
    }

    /// Passes run so far, how many of the days they answered were read whole, and how often the days held now
    /// had their whole order sorted (once when read whole; again only when more than `Day.sortAbove` technicians
    /// came at once, or one was not where its name put it).
    public var counts: (passes: Int, loads: Int, sorts: Int) {
        memory.withLock { ($0.passes, $0.loads, $0.days.values.reduce(0) { $0 + $1.sorts }) }
    }

    /// The technicians with a visit whose current window starts in `[from, to)` (epoch seconds), as
    /// `TechnicianReadModel.json` writes what `TechnicianReadModel.day` reads, with everything committed before
    /// this call.
    public func day(from: Int64, to: Int64) async throws -> Data {
        memory.withLock { $0.asked[from] = (to, .now) }
        try await withCheckedThrowingContinuation { (waiting: CheckedContinuation<Void, any Error>) in
            let start = memory.withLock { m -> Bool in
                switch m.gate {
                case .idle:
                    m.gate = .running(current: [waiting], next: [])
                    return true
                case .running(let current, let next):
                    m.gate = .running(current: current, next: next + [waiting])
                    return false
                }
            }
            if start { Task { await self.runPasses() } }
        }
        return try memory.withLock { m in
            guard let answer = m.answers[from], answer.to == to else {
                throw PostgresError(code: .protocolViolation, message: "the day from \(from) was not read")
            }
            return answer.body
        }
    }

    /// Runs passes while asks wait for one, each resuming those that came before it started.
    private func runPasses() async {
        while true {
            var failure: (any Error)?
            do { try await pass() } catch { failure = error }
            let (done, more) = memory.withLock { m -> ([CheckedContinuation<Void, any Error>], Bool) in
                guard case .running(let current, let next) = m.gate else { return ([], false) }
                m.gate = next.isEmpty ? .idle : .running(current: next, next: [])
                return (current, !next.isEmpty)
            }
            for waiting in done {
                if let failure { waiting.resume(throwing: failure) } else { waiting.resume() }
            }
            if !more { return }
        }
    }

    /// One pass: every day asked for lately brought up to date (or read whole), the others forgotten.
    private func pass() async throws {
        let idle = ContinuousClock.now - .seconds(Self.idleSeconds)
        // The days are taken out of the memory for the pass (the gate runs one pass at a time, and asks read
        // `answers`): held nowhere else, a day is brought up to date in place. A copy still in the memory would
        // make the first change copy all of its ten thousand entries and elements, every pass.
        let (wanted, taken) = memory.withLock { m -> ([(from: Int64, to: Int64)], TakenDays) in
            m.asked = m.asked.filter { $0.value.at > idle }
            m.answers = m.answers.filter { m.asked[$0.key]?.to == $0.value.to }
            let days = m.days.filter { m.asked[$0.key]?.to == $0.value.to }
            m.days = [:]
            return (m.asked.map { ($0.key, $0.value.to) }, TakenDays(days))
        }
        // A failed pass loses the days it took: the next one reads them whole.
        let updated = try await pool.withConnection { c -> [Int64: (day: Day, loaded: Bool)] in
            let table = try c.query("SELECT 'technician_visits'::regclass::oid::int8 AS oid").rows[0].int64("oid")
            var updated: [Int64: (day: Day, loaded: Bool)] = [:]
            for (from, to) in wanted {
                if var day = taken.take(from), day.table == table, try Self.follow(&day, on: c) {
                    updated[from] = (day, false)
                } else {
                    updated[from] = (try Self.load(from: from, to: to, table: table, on: c), true)
                }
            }
            return updated
        }
        memory.withLock { m in
            for (from, result) in updated where m.asked[from] != nil {
                m.days[from] = result.day
                m.answers[from] = (result.day.to, result.day.answer)
            }
            m.passes += 1
            m.loads += updated.values.filter(\.loaded).count
        }
    }

    /// The days a pass took out of the memory, each handed out once (so that nothing else holds it).
    private final class TakenDays: @unchecked Sendable {
        // @unchecked Sendable: made under the memory's lock and then used by the one pass that took it.
        private var days: [Int64: Day]
        init(_ days: [Int64: Day]) { self.days = days }
        func take(_ from: Int64) -> Day? { days.removeValue(forKey: from) }
    }

    /// Reads a day whole: the log's checkpoint first, then the rows (which show at least everything up to it).
    static func load(from: Int64, to: Int64, table: Int64, on c: PostgresConnection) throws -> Day {
        var day = Day(from: from, to: to, table: table, checkpoint: try EventStore.head(on: c))
        for (technicianId, visit) in try TechnicianReadModel.visits(startingFrom: from, to: to, on: c) {
            day.put(Entry(technicianId: technicianId, visit: visit))
        }
        try name(Set(day.visitsByTechnician.keys), in: &day, on: c)
        day.refresh()
        return day
    }

    /// Sets the name, avatar and van of each of `technicians` (`TechnicianReadModel.people`).
    static func name(_ technicians: Set<String>, in day: inout Day, on c: PostgresConnection) throws {
        for (id, person) in try TechnicianReadModel.people(of: technicians, on: c) { day.name(id, person) }
    }

    /// Brings `day` up to date from the log; false when it is cheaper (or, past the limit of events behind the
    /// horizon, only safe) to read it whole.
    static func follow(_ day: inout Day, on c: PostgresConnection) throws -> Bool {
        var touched = Set<String>()
        var tooMany = false
        let at = try EventStore.changes(after: day.checkpoint, on: c) { events in
            for event in events {
                if let id = VisitReadModel.visitId(ofStream: event.streamName) { touched.insert(id) }
            }
            if touched.count > reloadAbove { tooMany = true }
        }
        // Committed, but behind a transaction still open somewhere in the cluster (or since the read above):
        // their rows are current, so read them now (the checkpoint stays before them; follow order gives them
        // again once the horizon passes).
        let behind = try EventStore.eventsNotYetFollowed(after: at, limit: 1000, on: c)
        for event in behind {
            if let id = VisitReadModel.visitId(ofStream: event.streamName) { touched.insert(id) }
        }
        if tooMany || behind.count == 1000 || touched.count > reloadAbove { return false }
        day.checkpoint = at
        defer { day.refresh() }
        guard !touched.isEmpty else { return true }
        let rows = try TechnicianReadModel.visits(touched, on: c).map { Entry(technicianId: $0.technicianId, visit: $0.visit) }
        // Whose name may have changed: the technicians of the visits touched, before and after.
        var technicians = Set(touched.compactMap { day.entries[$0]?.technicianId })
        var seen = Set<String>()
        for entry in rows {
            seen.insert(entry.visit.visitId)
            technicians.insert(entry.technicianId)
            if entry.visit.windowStart >= day.from, entry.visit.windowStart < day.to {
                day.put(entry)
            } else {
                day.remove(entry.visit.visitId)
            }
        }
        for gone in touched.subtracting(seen) { day.remove(gone) }
        try name(technicians.filter { day.visitsByTechnician[$0] != nil }, in: &day, on: c)
        return true
    }
}
