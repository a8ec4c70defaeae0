import Foundation
import LiveActivityLedger
import Outbox
import Postgres
import TestSupport
import Testing
import VisitCommands
import VisitTestSupport

/// The device writes as steps of a caller's transaction: a Live Activity only on the customer's own visit,
/// the latest state pushed at once to an app that is behind, nothing pushed to one that is current.
@Suite(.timeLimit(.minutes(2))) struct DeviceRegistrationsTests {
    func registrations(_ fixtures: VisitFixtures) -> DeviceRegistrations {
        DeviceRegistrations(
            ledger: LiveActivityLedger(clock: fixtures.clock),
            pushes: OutboxPushes(outbox: Outbox(pool: fixtures.pool, clock: fixtures.clock)),
            states: fixtures.handler.states, rules: fixtures.readModel.rules)
    }

    func deliveries(_ fixtures: VisitFixtures, _ visitId: String) async throws -> Int {
        try await fixtures.pool.withConnection { c in
            try c.query("SELECT count(*) AS n FROM deliveries WHERE visit_id = \(visitId)").first?.int("n") ?? 0
        }
    }

    @Test func aLiveActivityIsTheCustomersOwnAndCatchesUpWhenBehind() async throws {
        try await VisitFixtures.withOutboxPushes { fixtures in
            let scheduled = try await fixtures.schedule("v-1", customer: "c-1")
            let devices = registrations(fixtures)
            let token = String(repeating: "ab", count: 32)

            let stranger = devices.registerLiveActivity(
                visitId: "v-1", activityId: "a-1", customerId: "c-2", pushToken: token, environment: .sandbox,
                version: nil, deviceId: nil)
            await #expect(throws: DeviceRegistrations.VisitNotFound.self) {
                try await fixtures.pool.withTransaction { try stranger($0) }
            }

            let current = devices.registerLiveActivity(
                visitId: "v-1", activityId: "a-1", customerId: "c-1", pushToken: token, environment: .sandbox,
                version: scheduled.state.version, deviceId: "d-1")
            let before = try await deliveries(fixtures, "v-1")
            #expect(try await fixtures.pool.withTransaction { try current($0) } == false)
            #expect(try await deliveries(fixtures, "v-1") == before, "an app at the visit's version gets no push")

            let behind = devices.registerLiveActivity(
                visitId: "v-1", activityId: "a-2", customerId: "c-1", pushToken: token, environment: .sandbox,
                version: 0, deviceId: "d-2")
            #expect(try await fixtures.pool.withTransaction { try behind($0) })
            #expect(try await deliveries(fixtures, "v-1") == before + 1, "an app behind gets the latest state")
        }
    }
}
