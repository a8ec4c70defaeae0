import Outbox
import TestSupport
import Testing
import VisitCommands
import VisitDomain

/// What the visit side writes into the outbox for an event's plans.
@Suite struct OutboxPushesTests {
    /// Every event of an active visit plans a replacement for a start still waiting for its arrival window
    /// (contract: every push carries the full current state); the statement that would write it is only
    /// written while such a start can exist — so the hot path of an imminent visit pays for none.
    @Test func aWaitingStartIsReplannedOnlyWhileOneCanBeWaiting() async throws {
        let fixtures = try await VisitFixtures.make()
        let pushes = OutboxPushes(outbox: Outbox(pool: fixtures.pool))
        let lead = Int(pushes.outbox.configuration.startLeadTimeSeconds)
        let rules = fixtures.readModel.rules
        let progress = #"{"type":"progress","kilometresAway":9.5}"#

        func statements(after json: String, on id: String, from previous: VisitState) async throws -> (Int, VisitState) {
            let state = try await fixtures.post(id, json).state
            let plans = PushPlanner.pushes(for: state, rules: rules)
            #expect(plans.map(\.audience) == [.liveActivities, .pendingStarts])
            return (try pushes.statements(for: plans, state: state, previous: previous).count, state)
        }

        // Within the lead time: the start went out at booking, nothing can be waiting.
        let near = try await fixtures.schedule("near", windowStartsIn: 600)
        #expect(try await statements(after: progress, on: near.state.visitId, from: near.state).0 == 1)

        // Hours ahead: the start waits, so the event replaces it.
        let far = try await fixtures.schedule("far", windowStartsIn: lead + 3 * 3600)
        let (farCount, farState) = try await statements(after: progress, on: far.state.visitId, from: far.state)
        #expect(farCount == 2)

        // The window moves inside the lead time: the waiting start (planned from the old window) is replaced
        // once more, to go now; after that nothing is waiting.
        let now = Int(fixtures.clock.now())
        let moved = "{\"type\":\"progress\",\"arrivalWindow\":{\"start\":\(now + 900),\"end\":\(now + 1800)}}"
        let (movedCount, movedState) = try await statements(after: moved, on: far.state.visitId, from: farState)
        #expect(movedCount == 2)
        #expect(try await statements(after: progress, on: far.state.visitId, from: movedState).0 == 1)
    }
}

