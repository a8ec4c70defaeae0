import Testing
import VisitProjections

/// `VisitReadModel.ListFilter`'s equality: `GET /v1/visits` shares one read between asks with equal filters,
/// so two filters that read different pages must never be equal.
@Suite struct ListFilterTests {
    typealias Filter = VisitReadModel.ListFilter

    @Test func filtersAreEqualOnlyWhenEveryFieldIs() {
        let base = Filter(customerId: "c-1", technicianId: "t-1", ended: false, limit: 100, after: (1_000, 7))
        let same = Filter(customerId: "c-1", technicianId: "t-1", ended: false, limit: 100, after: (1_000, 7))
        #expect(base == same && base.hashValue == same.hashValue)
        var others: [Filter] = []
        for change in 0..<7 {
            var other = base
            switch change {
            case 0: other.customerId = "c-2"
            case 1: other.technicianId = nil
            case 2: other.ended = nil
            case 3: other.limit = 50
            case 4: other.after = (1_000, 8)
            case 5: other.after = (999, 7)
            default: other.after = nil
            }
            others.append(other)
        }
        for other in others { #expect(other != base, "\(other)") }
        #expect(others[4].after?.booked == 8 && others[5].after?.scheduledAt == 999 && others[6].after == nil)
    }
}
