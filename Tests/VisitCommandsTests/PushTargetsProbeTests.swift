import Foundation
import LiveActivityLedger
import Outbox
import Postgres
import Runtime
import TestSupport
import Testing
import VisitCommands
import VisitDomain
import VisitTestSupport

/// A visit with no push target (no Live Activity, channel, push-to-start or notification token, no start
/// waiting) is written without the outbox's statement, and the same transaction checks that it still has
/// none (`Outbox.targetsProbe`): a target registered meanwhile through another process fails that check, and
/// the batch goes again with its pushes — nothing is lost and nothing is written twice.
@Suite(.serialized, .timeLimit(.minutes(2))) struct PushTargetsProbeTests {
    func batch(_ f: VisitFixtures, _ visit: String, _ json: String) async throws -> VisitCommandResult {
        try await f.pool.withConnection { c in
            f.handler.executeBatch([try VisitFixtures.command(visit, json)], on: c)
        }[0].get()
    }

    func count(_ f: VisitFixtures, _ query: PostgresQuery) async throws -> Int {
        try await f.pool.withConnection { c in try c.query(query).first!.int("n") }
    }

    func metric(_ f: VisitFixtures, _ name: String) -> Double { f.handler.store.metrics.value(name) ?? 0 }

    /// A scheduled visit of customer `c-1` after one progress command through the batches: its targets known.
    func withVisitWithoutTargets(_ visit: String, _ body: (VisitFixtures) async throws -> Void) async throws {
        try await VisitFixtures.withOutboxPushes { f in
            _ = try await f.schedule(visit)
            #expect(f.handler.states.hasTargets(visit) == nil, "nothing known before a batch probed it")
            _ = try await batch(f, visit, #"{"type": "progress", "kilometresAway": 9}"#)
            #expect(f.handler.states.hasTargets(visit) == false, "the probe found no target")
            try await body(f)
        }
    }

    @Test func aVisitWithoutPushTargetsIsWrittenWithoutItsPushes() async throws {
        try await withVisitWithoutTargets("v-p1") { f in
            let skipped = metric(f, "livevisits_command_pushes_skipped_total")
            let result = try await batch(f, "v-p1", #"{"type": "enRoute", "kilometresAway": 8}"#)
            #expect(result.state.version == 3 && result.state.status == .enRoute)
            #expect(metric(f, "livevisits_command_pushes_skipped_total") == skipped + 1)
            #expect(try await count(f, "SELECT count(*) AS n FROM deliveries WHERE visit_id = 'v-p1'") == 0)
            #expect(f.handler.states.hasTargets("v-p1") == false)
        }
    }

    /// Another process registers a Live Activity (this handler's cache is not told): the next command's probe
    /// finds it, nothing of the first write stays, and the command is written once, with its push to it.
    @Test func aTargetRegisteredElsewhereSendsTheBatchAgainWithItsPushes() async throws {
        try await withVisitWithoutTargets("v-p2") { f in
            try await f.pool.withConnection { c in
                try TokenRegistry(clock: f.clock).registerLiveActivity(
                    visitId: "v-p2", activityId: "a-1", pushToken: String(repeating: "ab", count: 32), environment: .sandbox,
                    on: c)
            }
            let appeared = metric(f, "livevisits_command_batch_targets_appeared_total")
            let redone = metric(f, "livevisits_command_batches_redone_total")
            let result = try await batch(f, "v-p2", #"{"type": "enRoute", "kilometresAway": 8}"#)
            #expect(result.state.version == 3)
            #expect(metric(f, "livevisits_command_batch_targets_appeared_total") == appeared + 1)
            #expect(metric(f, "livevisits_command_batches_redone_total") == redone, "written again as a batch, not one by one")
            #expect(try await count(f, "SELECT count(*) AS n FROM events WHERE stream_name = 'visit-v-p2'") == 3)
            #expect(
                try await count(
                    f,
                    """
                    SELECT count(*) AS n FROM deliveries
                    WHERE visit_id = 'v-p2' AND activity_id = 'a-1' AND kind = 'update' AND visit_version = 3
                    """) == 1, "the push to the new activity")
            #expect(f.handler.states.hasTargets("v-p2") == true)
        }
    }

    /// A customer's push-to-start token registered elsewhere counts too (it is a target of the customer's
    /// starts): the batch goes again with its pushes.
    @Test func aCustomersTokenRegisteredElsewhereCountsAsATarget() async throws {
        try await withVisitWithoutTargets("v-p3") { f in
            try await f.pool.withConnection { c in
                try TokenRegistry(clock: f.clock).registerPushToStart(
                    customerId: "c-1", deviceId: "d-1", pushToken: String(repeating: "cd", count: 32), environment: .sandbox,
                    on: c)
            }
            let appeared = metric(f, "livevisits_command_batch_targets_appeared_total")
            let result = try await batch(f, "v-p3", #"{"type": "progress", "kilometresAway": 7}"#)
            #expect(result.state.version == 3)
            #expect(metric(f, "livevisits_command_batch_targets_appeared_total") == appeared + 1)
            #expect(f.handler.states.hasTargets("v-p3") == true)
        }
    }

    /// What this process registers itself marks the visit, or every visit of the customer known here, as having
    /// a target (not other customers' visits), so their next commands go with their pushes without a probe.
    @Test func aRegistrationHereMarksTheVisitsAsHavingATarget() async throws {
        try await VisitFixtures.withOutboxPushes { f in
            for (visit, customer) in [("v-p4", "c-4"), ("v-p5", "c-4"), ("v-p6", "c-6")] {
                _ = try await f.schedule(visit, customer: customer)
            }
            for visit in ["v-p4", "v-p5", "v-p6"] { _ = try await batch(f, visit, #"{"type": "progress", "kilometresAway": 3}"#) }
            let states = f.handler.states
            #expect(
                states.hasTargets("v-p4") == false && states.hasTargets("v-p5") == false && states.hasTargets("v-p6") == false)
            states.targetsRegistered(customer: "c-4")
            #expect(states.hasTargets("v-p4") == true)
            #expect(states.hasTargets("v-p5") == true)
            #expect(states.hasTargets("v-p6") == false)
            states.targetsRegistered(visits: ["v-p6", "v-elsewhere"])
            #expect(states.hasTargets("v-p6") == true)
            #expect(states.hasTargets("v-elsewhere") == nil, "a visit whose state is not known here stays unknown")
            #expect(states.state("v-p6")?.version == 2, "the state stays")
            let skipped = f.handler.store.metrics.value("livevisits_command_pushes_skipped_total") ?? 0
            _ = try await batch(f, "v-p6", #"{"type": "enRoute"}"#)
            #expect(
                (f.handler.store.metrics.value("livevisits_command_pushes_skipped_total") ?? 0) == skipped,
                "written with its pushes")
        }
    }
}
