import Testing

@testable import VisitDomain

@Suite(.timeLimit(.minutes(2))) struct VisitViewTests {
    @Test func activeVisitHasTheContractsShape() throws {
        let t = TestVisit.t0
        let state = try TestVisit.fold([
            (TestVisit.scheduled(), t), (.enRoute(.none), t + 60),
            (.nearby(ArrivalUpdate(kilometresAway: 1.2)), t + 120),
        ])
        let json = VisitView(state: state, rules: .contractDefault).json(liveActivities: 1)
        guard case .object(let members) = json else {
            Issue.record("not an object")
            return
        }
        #expect(
            members.map(\.key) == [
                "visitId", "customerId", "version", "status", "attributes", "contentState", "relevanceScore",
                "staleDate",
                "dismissal", "liveActivities",
            ])
        #expect(json["visitId"] == .string("v-1001"))
        #expect(json["customerId"] == .string("c-7"))
        #expect(json["version"] == .number(3))
        #expect(json["status"] == .string("nearby"))
        #expect(json["relevanceScore"] == .number(100))
        #expect(json["staleDate"] == .number(Double(t + 240)))
        #expect(json["dismissal"] == .null)
        #expect(json["liveActivities"] == .number(1))
        #expect(
            json["attributes"]
                == .object([
                    JSONMember("customerFirstName", .string("Alex")),
                    JSONMember("serviceAddress", .string("12 Elm Row")),
                    JSONMember("jobSummary", .string("Boiler check")),
                ]))
        #expect(json["contentState"]?["kilometresAway"] == .number(1.2))
        #expect(json["contentState"]?["status"] == .string("nearby"))
    }

    @Test func endedVisitsShowTheirDismissal() throws {
        let completed = try #require(try TestVisit.accepted(TestVisit.path(to: .completed)).last).state
        let json = VisitView(state: completed, rules: .contractDefault).json(liveActivities: 0)
        #expect(
            json["dismissal"]
                == .object([
                    JSONMember("policy", .string("after")),
                    JSONMember("date", .number(Double(completed.apsTimestamp + 3600))),
                ]))
        #expect(json["staleDate"] == .null)
        #expect(json["relevanceScore"] == .number(0))
        let cancelled = try #require(try TestVisit.accepted(TestVisit.path(to: .cancelled)).last).state
        #expect(
            VisitView(state: cancelled, rules: .contractDefault).json(liveActivities: 0)["dismissal"]
                == .object([JSONMember("policy", .string("immediate"))]))
    }
}
