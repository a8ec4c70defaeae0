import Testing

@testable import APIStores

/// The held state requests' index: each way of releasing takes exactly the requests it names, once.
@Suite struct HeldRequestsTests {
    /// Requests 1…6: visits a, a, b, b, c, c; links t1…t6; deadlines 10, 11, …, 15.
    func sixHeld() -> HeldRequests<Int> {
        var held = HeldRequests<Int>()
        for n in 1...6 {
            let visit = ["a", "b", "c"][(n - 1) / 2]
            held.add(UInt64(n), visitId: visit, tokenHash: "t\(n)", deadline: Double(9 + n), waiter: n)
        }
        return held
    }

    @Test func aChangedVisitReleasesItsRequestsAlone() {
        var held = sixHeld()
        #expect(held.remove(visits: ["b", "unknown"]).sorted() == [3, 4])
        #expect(held.count == 4)
        #expect(Set(held.visitIds) == ["a", "c"])
        #expect(held.remove(visits: ["b"]).isEmpty, "released twice")
        #expect(held.remove(3) == nil)
    }

    @Test func aDroppedLinkReleasesItsRequestsAlone() {
        var held = sixHeld()
        held.add(7, visitId: "a", tokenHash: "t2", deadline: 16, waiter: 7)
        #expect(held.remove(tokenHash: "t2").sorted() == [2, 7])
        #expect(held.remove(tokenHash: "t2").isEmpty)
        #expect(held.remove(visits: ["a"]) == [1])
        #expect(held.count == 4)
    }

    @Test func deadlinesReleaseInOrderSkippingWhatWentEarlier() {
        var held = sixHeld()
        #expect(held.remove(2) == 2)
        #expect(held.removeDue(at: 9.5).isEmpty)
        #expect(held.removeDue(at: 12).sorted() == [1, 3], "request 2 had gone already")
        #expect(held.removeDue(at: 12).isEmpty)
        #expect(held.remove(visits: ["c"]).sorted() == [5, 6])
        #expect(held.removeDue(at: 100) == [4])
        #expect(held.count == 0)
        #expect(held.visitIds.isEmpty)
    }

    @Test func manyRoundsKeepOnlyWhatIsHeld() {
        var held = HeldRequests<Int>()
        var next = 0
        for round in 0..<50 {
            for _ in 0..<100 {
                next += 1
                held.add(UInt64(next), visitId: "v\(next % 7)", tokenHash: "t\(next)", deadline: Double(round), waiter: next)
            }
            // Everything added before this round has lapsed.
            let due = held.removeDue(at: Double(round) - 0.5)
            #expect(due.count == (round == 0 ? 0 : 100))
            #expect(held.count == 100)
        }
        #expect(held.removeAll().count == 100)
        #expect(held.count == 0)
        #expect(held.removeDue(at: 1000).isEmpty)
    }
}
