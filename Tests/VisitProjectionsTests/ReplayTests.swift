import EventStore
import Foundation
import Postgres
import TestSupport
import Testing
import VisitCommands
import VisitDomain
import VisitProjections
import VisitTestSupport

@Suite struct ReplayTests {
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
    /// appends keep running, and the replay enqueues no push.
    @Test func replayRebuildsTheSameReadModelWhileAppendsContinue() async throws {
        let pushes = CountingEnqueuer()
        let f = try await VisitFixtures.make(pushes: pushes)
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
        // The replay itself enqueued nothing: only the 40 late visits' commands did.
        let latePushes = pushes.count - pushesBefore
        #expect(latePushes > 0)

        let after = try await f.rows()
        #expect(after.count == visits + 40)
        for (id, row) in before {
            #expect(after[id] == row, "visit \(id) differs after replay")
        }
        for v in 0..<40 {
            #expect(after["late-\(v)"]?.version == 2, "an append made during the replay was lost")
        }
        // A second replay over a replayed table works and changes nothing.
        let again = try await replay.run()
        #expect(again.visits == visits + 40)
        #expect(try await f.rows() == after)
    }

    @Test func replayAppliesChangedRulesToHistory() async throws {
        let f = try await VisitFixtures.make()
        _ = try await f.schedule("v-r")
        try await f.post("v-r", #"{"type": "nearby", "kilometresAway": 1}"#)
        var text = try String(contentsOf: TestDatabase.projectionsDirectory.appendingPathComponent("rules.json"), encoding: .utf8)
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
