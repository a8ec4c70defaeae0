import Foundation
import Outbox
import Postgres
import TestSupport
import Testing
import VisitCommands
import VisitDomain
import VisitTestSupport

/// The visit side of the 8-hour renewal (contract §9): the read model's current state as the end to each
/// old activity (dismissed at once) and the start to the push-to-start tokens; nothing once ended.
@Suite(.timeLimit(.minutes(2))) struct ActivityRenewalsTests {
    @Test func aRenewalCarriesTheCurrentStateAndNoneOnceEnded() async throws {
        try await VisitFixtures.with { f in
            _ = try await f.schedule("v-1")
            try await f.post("v-1", #"{"type": "enRoute", "kilometresAway": 9.5}"#)
            let rules = try ProjectionRules.load(directory: TestDatabase.projectionsDirectory)
            let renewer = ActivityRenewals(rules: rules)
            let now = f.clock.now() + Double(rules.activityRenewalSeconds)
            let renewal = try #require(
                try await f.pool.withConnection { try renewer.renewal(visitId: "v-1", now: now, on: $0) })
            #expect(renewal.customerId == "c-1")
            let end = renewal.end
            #expect(end.kind == .end)
            #expect(renewal.start.kind == .start)
            #expect(end.apsTimestamp < renewal.start.apsTimestamp)
            #expect(end.eventRecordedAt == now)
            let aps = try #require(try JSONValue.parse(end.body)["aps"])
            #expect(aps["dismissal-date"] == .number(Double(end.apsTimestamp)))
            let start = try #require(try JSONValue.parse(renewal.start.body)["aps"])
            #expect(start["content-state"]?["status"] == .string("enRoute"))
            // Its own alert, never the booking's.
            #expect(start["alert"]?["title"] == .string(rules.renewalAlert.title))
            #expect(start["alert"]?["title"] != .string("Visit booked"))
            #expect(start["input-push-token"] == .number(1))

            try await f.post("v-1", #"{"type": "cancelled", "reason": "customer away"}"#)
            let ended = try await f.pool.withConnection {
                try renewer.renewal(visitId: "v-1", now: now, on: $0)
            }
            #expect(ended == nil)
        }
    }
}
