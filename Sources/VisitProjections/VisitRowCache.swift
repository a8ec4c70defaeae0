import Runtime
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// What list reads drew from stored rows lately: each visit's view text and location, with the stored columns
/// they were drawn from. A list read decodes a row again only when its stored state or its ruled columns
/// (relevance, stale date, dismissal) are not byte for byte the ones remembered.
///
/// Drawing a row parses its state snapshot (JSON) and writes its view: most of what a console's board costs,
/// whose pages read the same hundred visits every two seconds while only a few of them change. Keyed by the
/// stored text itself, not by the version, the memory cannot be told a wrong answer by a row rewritten at the
/// same version (a replay under other rules, an erasure): it never holds more than the row says. It holds no
/// plain personal data (the view's personal fields and the location are sealed; answers open them on the way
/// out). At `capacity` visits it starts again empty.
public final class VisitRowCache: Sendable {
    struct Stored: Equatable {
        let state: String
        let relevanceScore: String?
        let staleDate: String?
        let dismissalPolicy: String?
        let dismissalDate: String?

        /// The state byte for byte: `String`'s `==` compares by Unicode canonical equivalence, which walks any
        /// text not known to be ASCII character by character (a snapshot with one accented letter), and is
        /// weaker than the promise here. The other columns are numbers and words.
        static func == (a: Stored, b: Stored) -> Bool {
            sameBytes(a.state, b.state) && a.relevanceScore == b.relevanceScore && a.staleDate == b.staleDate
                && a.dismissalPolicy == b.dismissalPolicy && a.dismissalDate == b.dismissalDate
        }

        private static func sameBytes(_ a: String, _ b: String) -> Bool {
            guard a.utf8.count == b.utf8.count else { return false }
            var (a, b) = (a, b)
            return a.withUTF8 { x in b.withUTF8 { y in x.count == 0 || memcmp(x.baseAddress!, y.baseAddress!, x.count) == 0 } }
        }
    }

    struct Drawn {
        let stored: Stored
        let view: String
        let location: String?
    }

    private let entries = Lock<[String: Drawn]>([:])
    private let hits = Atomic<Int>(0)
    private let misses = Atomic<Int>(0)
    public let capacity: Int

    public init(capacity: Int = 1_000) {
        self.capacity = capacity
    }

    /// The view and location drawn from each row's `stored` columns, where remembered (nil where not). The
    /// lock is held once for all the rows, and only to take their entries: a board's pages read the same
    /// rows at once, and comparing each state under the lock, a lock taken per row, made them wait for each
    /// other.
    func drawn(_ rows: [(visitId: String, stored: Stored)]) -> [(view: String, location: String?)?] {
        let entries = self.entries.withLock { entries in rows.map { entries[$0.visitId] } }
        var found = 0
        let drawn = zip(rows, entries).map { row, entry -> (view: String, location: String?)? in
            guard let entry, entry.stored == row.stored else { return nil }
            found += 1
            return (entry.view, entry.location)
        }
        hits.add(found, ordering: .relaxed)
        misses.add(rows.count - found, ordering: .relaxed)
        return drawn
    }

    func remember(_ drawn: [(visitId: String, drawn: Drawn)]) {
        guard !drawn.isEmpty else { return }
        entries.withLock { entries in
            for (visitId, drawn) in drawn {
                if entries[visitId] == nil, entries.count >= capacity { entries.removeAll(keepingCapacity: true) }
                entries[visitId] = drawn
            }
        }
    }

    /// Rows drawn from memory and rows decoded, so far.
    public var hitsAndMisses: (hits: Int, misses: Int) {
        (hits: hits.load(ordering: .relaxed), misses: misses.load(ordering: .relaxed))
    }
}
