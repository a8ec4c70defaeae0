import EventStore
import Foundation
import LiveActivityLedger
import Outbox
import Postgres
import TestSupport
import Testing
import VisitCommands
import VisitDomain
import VisitProjections
import VisitTestSupport

@Suite(.timeLimit(.minutes(5))) struct ReplayTests {
    static let journey = [
        #"{"type": "enRoute", "kilometresAway": 12}"#,
        #"{"type": "progress", "kilometresAway": 9.5}"#,
        #"{"type": "progress", "kilometresAway": 6.25}"#,
        #"{"type": "progress", "kilometresAway": 3}"#,
        #"{"type": "nearby", "kilometresAway": 1.2}"#,
        #"{"type": "onSite"}"#,
        #"{"type": "finishing"}"#,
        #"{"type": "progress", "kilometresAway": 0}"#,
        #"{"type": "completed"}"#,
    ]

    /// 10,000 events over 1,000 visits; the read model after a replay equals the one before, also while
    /// appends keep running. (That the replay enqueues no push is `aReplayEnqueuesNoPush`.)
    @Test func replayRebuildsTheSameReadModelWhileAppendsContinue() async throws {
        let pushes = CountingEnqueuer()
        try await VisitFixtures.with(pushes: pushes) { f in
            let visits = 1_000
            try await withThrowingTaskGroup(of: Void.self) { group in
                for lane in 0..<8 {
                    group.addTask {
                        for v in stride(from: lane, to: visits, by: 8) {
                            _ = try await f.schedule("v-\(v)", customer: "c-\(v % 37)", technician: "t-\(v % 11)")
                            for (i, step) in ReplayTests.journey.enumerated() where v % 5 != 0 || i < 4 {
                                try await f.post("v-\(v)", step)
                                if i % 3 == 0 { f.clock.advance(by: 0.4) }
                            }
                        }
                    }
                }
                try await group.waitForAll()
            }
            let before = try await f.rows()
            #expect(before.count == visits)
            let eventCount = try await f.pool.query("SELECT count(*) AS n FROM events").first!.int("n")
            #expect(eventCount >= 8_000)
            let pushesBefore = pushes.count

            // Appends during the replay: new visits and events on old ones.
            let replay = VisitReplay(pool: f.pool, readModel: f.readModel)
            async let report = replay.run()
            for v in 0..<40 {
                _ = try await f.schedule("late-\(v)")
                try await f.post("late-\(v)", ReplayTests.journey[0])
            }
            let finished = try await report
            #expect(finished.events >= eventCount)
            // Only the 40 late visits' commands planned pushes while the replay ran.
            let planned = pushes.all.dropFirst(pushesBefore)
            #expect(!planned.isEmpty)
            #expect(planned.allSatisfy { $0.visitId.hasPrefix("late-") }, "a push for a replayed visit was planned")

            let after = try await f.rows()
            #expect(after.count == visits + 40)
            for (id, row) in before {
                #expect(after[id] == row, "visit \(id) differs after replay")
            }
            for v in 0..<40 {
                #expect(after["late-\(v)"]?.version == 2, "an append made during the replay was lost")
            }
            // A second replay over a replayed table works and changes nothing.
            let plannedBefore = pushes.count
            let again = try await replay.run()
            #expect(again.visits == visits + 40)
            #expect(try await f.rows() == after)
            #expect(pushes.count == plannedBefore)
        }
    }

    /// Many visits with every kind of history (each journey's prefix, cancellations and failures with reasons,
    /// reassignments), with text that COPY must escape (tabs, newlines, backslashes, quotes, non-ASCII) in
    /// attributes, names and reasons: after a replay every row — ids, status, version, times, the view text
    /// and the state snapshot — is byte for byte the row the live projection wrote, and so are the indexes.
    @Test func aReplayWritesExactlyTheRowsTheLiveProjectionWrote() async throws {
        try await VisitFixtures.with { f in
            // JSON string contents as a client posts them (escapes included): quotes, an escaped slash and accent,
            // backslashes (free text refuses tabs and newlines but in a reason, which gets a tab below).
            let awkward = [#"Zoë \"Z\" 🚐"#, #"slash\/here"#, #"e\u0301 accent"#, #"back\\slash \\N"#, "plain"]
            let visits = 600
            try await withThrowingTaskGroup(of: Void.self) { group in
                for lane in 0..<6 {
                    group.addTask {
                        for v in stride(from: lane, to: visits, by: 6) {
                            let text = awkward[v % awkward.count]
                            let start = Int(f.clock.now()) + 600
                            let body = """
                                {"visitId": "m-\(v)", "customerId": "c-\(v % 13)",
                                 "attributes": {"customerFirstName": "\(text)", "serviceAddress": "\(v) \(text) Row", "jobSummary": "job \(v)"},
                                 "technician": {"id": "t-\(v % 7)", "name": "\(text)", "avatarSymbol": "person.crop.circle", "vanDescription": "van \(text)"},
                                 "arrivalWindow": {"start": \(start), "end": \(start + 600)}, "kilometresAway": \(Double(v % 40) + 0.25)}
                                """
                            let scheduled = try ScheduleVisitRequest.parse(Array(body.utf8)) { "m-\(v)" }
                            _ = try await f.handler.schedule(scheduled, context: VisitFixtures.dispatcher)
                            let steps = ReplayTests.journey.prefix(v % 10)
                            for step in steps { try await f.post("m-\(v)", step) }
                            switch v % 4 {
                            case 1 where steps.count < 5:
                                try await f.post("m-\(v)", #"{"type": "cancelled", "reason": "\#(text) — customer away"}"#)
                            case 2 where steps.count < 5:
                                try await f.post(
                                    "m-\(v)",
                                    #"{"type": "reassigned", "technician": {"id": "t-x", "name": "\#(text)", "avatarSymbol": "car", "vanDescription": "red"}}"#
                                )
                            case 3 where steps.count < 6:
                                try await f.post("m-\(v)", #"{"type": "failed", "reason": "\#(text)\tno access"}"#)
                            default: break
                            }
                            if v % 3 == 0 { f.clock.advance(by: 1) }
                        }
                    }
                }
                try await group.waitForAll()
            }
            let table: PostgresQuery = """
                SELECT visit_id, customer_id, technician_id, status, ended::text, version::text, scheduled_at::text, state,
                       relevance_score::text, stale_date::text, dismissal_policy, dismissal_date::text, booked::text
                FROM visits ORDER BY visit_id
                """
            let indexes: PostgresQuery =
                "SELECT indexname, indexdef FROM pg_indexes WHERE tablename = 'visits' ORDER BY indexname"
            let live = try await f.pool.query(table).rows.map(\.values)
            let liveIndexes = try await f.pool.query(indexes).rows.map(\.values)
            #expect(live.count == visits)
            #expect(live.allSatisfy { Int($0[12]!)! > 0 }, "every row holds its booking's position in the log")
            #expect(Set(live.map { $0[3] }).count >= 6, "the histories end in many statuses")
            #expect(live.contains { $0[7]!.contains("\\t") && $0[7]!.contains("\\\\") }, "the states carry escaped text")

            let report = try await VisitReplay(pool: f.pool, readModel: f.readModel).run()
            #expect(report.visits == visits)
            let replayed = try await f.pool.query(table).rows.map(\.values)
            #expect(replayed.count == live.count)
            for (a, b) in zip(live, replayed) {
                #expect(a == b, "visit \(a[0] ?? "?") differs after replay")
            }
            #expect(try await f.pool.query(indexes).rows.map(\.values) == liveIndexes)
        }
    }

    /// Visits with Live Activities and push-to-start tokens, whose commands filled the outbox; a replay
    /// over them (and over changed rules) adds no delivery and touches none.
    @Test func aReplayEnqueuesNoPush() async throws {
        try await VisitFixtures.withOutboxPushes { f in
            let registry = TokenRegistry(clock: f.clock)
            try await f.pool.withConnection { c in
                _ = try registry.registerPushToStart(
                    customerId: "c-1", deviceId: "d-1", pushToken: String(repeating: "5a", count: 32), environment: .sandbox,
                    on: c)
            }
            for v in 0..<20 {
                _ = try await f.schedule("v-\(v)")
                try await f.pool.withConnection { c in
                    _ = try registry.registerLiveActivity(
                        visitId: "v-\(v)", activityId: "a-\(v)", pushToken: String(format: "%064x", v + 1), environment: .sandbox,
                        on: c)
                }
                for step in ReplayTests.journey.prefix(v % 2 == 0 ? 9 : 4) { try await f.post("v-\(v)", step) }
            }
            let snapshot: PostgresQuery =
                "SELECT count(*) AS n, coalesce(sum(hashtext(d::text)), 0)::text AS digest FROM deliveries d"
            let before = try #require(try await f.pool.query(snapshot).first)
            #expect(try before.int("n") > 20, "the commands enqueued pushes, so an enqueueing replay would show")

            let report = try await VisitReplay(pool: f.pool, readModel: f.readModel).run()
            #expect(report.visits == 20)
            let after = try #require(try await f.pool.query(snapshot).first)
            #expect(try after.int("n") == before.int("n"), "the replay enqueued pushes")
            #expect(try after.string("digest") == before.string("digest"), "the replay changed deliveries")
        }
    }

    /// A rule change applies to new events: a visit last written under the old rules reads as they made it (its
    /// row keeps what they gave it, and its view is drawn from that, not through the rules in force), one written
    /// after the change as the new ones make it — until a replay applies the new rules to both.
    @Test func aRuleChangeAppliesToNewEventsUntilAReplay() async throws {
        try await VisitFixtures.with { f in
            for id in ["v-old", "v-new"] {
                _ = try await f.schedule(id)
                try await f.post(id, #"{"type": "nearby", "kilometresAway": 1}"#)
            }
            var text = try String(
                contentsOf: TestDatabase.projectionsDirectory.appendingPathComponent("rules.json"), encoding: .utf8)
            text = text.replacingOccurrences(of: "\"relevance\": 100", with: "\"relevance\": 55")
            let changed = try VisitReadModel(
                projectionsDirectory: TestDatabase.projectionsDirectory, rules: try ProjectionRules.parse(Array(text.utf8)))
            let handler = VisitCommandHandler(
                store: EventStore(pool: f.pool), readModel: changed, pushes: CountingEnqueuer(), clock: f.clock)
            _ = try await handler.post(
                visitId: "v-new", event: try VisitEventRequest.parse(Array(#"{"type": "progress", "kilometresAway": 0.5}"#.utf8)),
                context: VisitFixtures.dispatcher)
            func relevance() async throws -> [String: JSONValue?] {
                try await f.rows().filter { $0.key.hasPrefix("v-") }.mapValues {
                    try JSONValue.parse(Array($0.body(liveActivities: 0).utf8))["relevanceScore"]
                }
            }
            #expect(try await relevance() == ["v-old": .number(100), "v-new": .number(55)])
            _ = try await VisitReplay(pool: f.pool, readModel: changed).run()
            #expect(try await relevance() == ["v-old": .number(55), "v-new": .number(55)])
        }
    }

    @Test func replayAppliesChangedRulesToHistory() async throws {
        try await VisitFixtures.with { f in
            _ = try await f.schedule("v-r")
            try await f.post("v-r", #"{"type": "nearby", "kilometresAway": 1}"#)
            var text = try String(
                contentsOf: TestDatabase.projectionsDirectory.appendingPathComponent("rules.json"), encoding: .utf8)
            text = text.replacingOccurrences(of: "\"relevance\": 100", with: "\"relevance\": 55")
            #expect(text.contains("55"))
            let rules = try ProjectionRules.parse(Array(text.utf8))
            let changed = try VisitReadModel(projectionsDirectory: TestDatabase.projectionsDirectory, rules: rules)
            _ = try await VisitReplay(pool: f.pool, readModel: changed).run()
            let row = try #require(try await f.rows()["v-r"])
            let body = try JSONValue.parse(Array(row.body(liveActivities: 0).utf8))
            #expect(body["relevanceScore"] == .number(55))
        }
    }
}
