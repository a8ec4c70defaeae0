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

    private struct Memory {
        var entries: [String: Drawn] = [:]
        var hits = 0
        var misses = 0
    }

    private let memory = Mutex(Memory())
    public let capacity: Int

    public init(capacity: Int = 1_000) {
        self.capacity = capacity
    }

    /// The view and location drawn from `stored` for the visit, if remembered.
    func drawn(_ visitId: String, from stored: Stored) -> (view: String, location: String?)? {
        memory.withLock { m -> (view: String, location: String?)? in
            guard let drawn = m.entries[visitId], drawn.stored == stored else {
                m.misses += 1
                return nil
            }
            m.hits += 1
            return (drawn.view, drawn.location)
        }
    }

    func remember(_ visitId: String, _ drawn: Drawn) {
        memory.withLock { m in
            if m.entries[visitId] == nil, m.entries.count >= capacity { m.entries.removeAll(keepingCapacity: true) }
            m.entries[visitId] = drawn
        }
    }

    /// Rows drawn from memory and rows decoded, so far.
    public var hitsAndMisses: (hits: Int, misses: Int) { memory.withLock { (hits: $0.hits, misses: $0.misses) } }
}
