import EventStore
import Foundation
import Postgres
import TestSupport
import Testing
import VisitCommands
import VisitDomain
import VisitProjections
import VisitTestSupport

@Suite(.timeLimit(.minutes(5))) struct VisitCommandTests {
    @Test func aVisitGoesFromScheduledToCompletedThroughTheReadModel() async throws {
        let pushes = CountingEnqueuer()
        try await VisitFixtures.with(pushes: pushes) { f in
            let scheduled = try await f.schedule("v-1")
            #expect(scheduled.state.version == 1)
            try await f.post("v-1", #"{"type": "enRoute", "kilometresAway": 9.5}"#)
            f.clock.advance(by: 60)
            try await f.post("v-1", #"{"type": "nearby", "kilometresAway": 1.2}"#)
            try await f.post("v-1", #"{"type": "onSite"}"#)
            try await f.post("v-1", #"{"type": "completed"}"#)
            let row = try #require(try await f.rows()["v-1"])
            #expect(row.version == 5)
            #expect(row.status == "completed")
            #expect(row.ended)
            let body = try JSONValue.parse(Array(row.body(liveActivities: 2).utf8))
            #expect(body["status"] == .string("completed"))
            #expect(body["liveActivities"] == .number(2))
            #expect(body["relevanceScore"] == .number(0))
            #expect(body["contentState"]?["kilometresAway"] == .number(0))
            // The log holds exactly the five events, each with the actor.
            let events = try await f.handler.store.readStream("visit-v-1")
            #expect(events.map(\.type) == ["scheduled", "enRoute", "nearby", "onSite", "completed"])
            #expect(events.allSatisfy { $0.metadata.actorRole == "dispatcher" })
            #expect(pushes.all.contains { $0.kind == .end })
        }
    }

    @Test func illegalEventsAppendNothing() async throws {
        try await VisitFixtures.with { f in
            _ = try await f.schedule("v-2")
            await #expect(throws: VisitDecisionError.self) { try await f.post("v-2", #"{"type": "completed"}"#) }
            await #expect(throws: VisitDecisionError.self) { _ = try await f.schedule("v-2") }
            try await f.post("v-2", #"{"type": "cancelled", "reason": "customer away"}"#)
            do {
                try await f.post("v-2", #"{"type": "enRoute"}"#)
                Issue.record("an ended visit accepted an event")
            } catch let error as VisitDecisionError {
                #expect(error.code == .visitEnded)
            }
            #expect(try await f.handler.store.readStream("visit-v-2").count == 2)
            await #expect(throws: VisitDecisionError.self) { try await f.post("missing", #"{"type": "enRoute"}"#) }
        }
    }

    @Test func ifMatchRefusesAStaleVersionAndConcurrentPostsAllLand() async throws {
        try await VisitFixtures.with { f in
            _ = try await f.schedule("v-3")
            let stale = VisitCommandContext(actor: VisitFixtures.dispatcher.actor, expectedVersion: 7)
            await #expect(throws: VersionMismatch.self) {
                try await f.handler.post(
                    visitId: "v-3", event: try VisitEventRequest.parse(Array(#"{"type":"progress","kilometresAway":3}"#.utf8)),
                    context: stale)
            }
            // Without If-Match, racing progress events are retried on the new state: all of them land.
            try await withThrowingTaskGroup(of: Void.self) { group in
                for i in 0..<8 {
                    group.addTask { try await f.post("v-3", #"{"type": "progress", "kilometresAway": \#(10 - i)}"#) }
                }
                try await group.waitForAll()
            }
            let events = try await f.handler.store.readStream("visit-v-3")
            #expect(events.count == 9)
            #expect(try await f.rows()["v-3"]?.version == 9)
        }
    }

    /// An unknown visit is unknown (404 `not_scheduled`) whatever version `If-Match` names: existence is
    /// checked before the version.
    @Test func ifMatchOnAnUnknownVisitIsNotAVersionConflict() async throws {
        try await VisitFixtures.with { f in
            let progress = try VisitEventRequest.parse(Array(#"{"type":"progress","kilometresAway":3}"#.utf8))
            for version in [0, 1] {
                let pinned = VisitCommandContext(actor: VisitFixtures.dispatcher.actor, expectedVersion: version)
                do {
                    _ = try await f.handler.post(visitId: "v-unknown", event: progress, context: pinned)
                    Issue.record("an unknown visit accepted an event")
                } catch let error as VisitDecisionError {
                    #expect(error.code == .notScheduled)
                }
            }
            #expect(try await f.handler.store.readStream("visit-v-unknown").isEmpty)
        }
    }

    /// The command decides from the snapshot in the read model only when it is at the stream's version:
    /// an event appended behind its back (or a row lost) makes it fold the stream instead, never append
    /// at a stale version or leave a gap.
    @Test func aReadModelRowBehindTheStreamIsNotTrusted() async throws {
        try await VisitFixtures.with { f in
            _ = try await f.schedule("v-4")
            try await f.post("v-4", #"{"type": "enRoute", "kilometresAway": 9}"#)
            // Rewind the row to version 1 (as if a write had bypassed it): the stream is at 2.
            let scheduledOnly = try #require(try await f.handler.store.readStream("visit-v-4").first)
            let state = try VisitDecider.replay([
                StoredVisitEvent(
                    eventType: scheduledOnly.type, data: Array(scheduledOnly.data.utf8), version: 1,
                    recordedAt: Int(scheduledOnly.recordedAt.rounded(.down)))
            ])
            try await f.pool.withConnection { c in
                try c.query("DELETE FROM visits WHERE visit_id = \("v-4")")
                try f.readModel.upsert([try #require(state)], on: c)
            }
            #expect(try await f.rows()["v-4"]?.version == 1)
            // nearby is legal from enRoute (the stream's truth), and lands at version 3.
            let result = try await f.post("v-4", #"{"type": "nearby", "kilometresAway": 1.2}"#)
            #expect(result.state.version == 3)
            #expect(result.state.status == .nearby)
            #expect(try await f.handler.store.readStream("visit-v-4").map(\.position) == [1, 2, 3])
            #expect(try await f.rows()["v-4"]?.version == 3)
            // With the row gone entirely, the stream still answers.
            _ = try await f.pool.withConnection { c in try c.query("DELETE FROM visits WHERE visit_id = \("v-4")") }
            let after = try await f.post("v-4", #"{"type": "onSite"}"#)
            #expect(after.state.version == 4)
            #expect(try await f.rows()["v-4"]?.status == "onSite")
        }
    }
}
