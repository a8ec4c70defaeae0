import APNsSimulator
import Foundation
import JSON
import Postgres
import Runtime
import TestSupport
import Testing

/// CONTRACT §12: two `serve --api-only` and three `worker` processes on one database. 2,000 events posted
/// through both APIs (each visit's events alternate between them); every delivery the outbox planned and did
/// not supersede reaches APNs exactly once, every activity gets its one `end`, and no target is sent an
/// older state after a newer one. No process dies here, so no lease is lost: a second copy of an apns-id
/// would be a bug, and a second apns-id for one planned state could not come from a retry.
@Suite(.timeLimit(.minutes(3))) struct ManyProcessesTests {
    static let visits = 400  // × 5 events (scheduled, enRoute, nearby, onSite, completed) = 2,000
    static let inFlight = 16

    @Test func twoAPIsAndThreeWorkersDeliverEveryPlannedPushOnce() async throws {
        try await withTestDatabase(poolSize: 2) { url, pool in
            try await Fleet.with { fleet in
                let dispatcher = try await fleet.dispatcherKey(databaseURL: url)
                let apis = try await fleet.startAPIs(2, databaseURL: url)
                for n in 0..<3 { try fleet.startWorker(databaseURL: url, name: "worker-\(n)") }

                let minted = try await apis[0].send(
                    "POST", "/v1/keys", key: dispatcher, body: ["role": "customer", "subject": "c-1"])
                #expect(minted.status == 201)
                let customer = try #require(minted.json["key"]?.stringValue)

                // Each visit: scheduled, its activity registered at version 1 (nothing to push yet), then four
                // status events, each request to the other API than the one before.
                let apiPair = apis
                let answers = try await withThrowingTaskGroup(of: [String].self) { group in
                    var next = 0
                    var problems: [String] = []
                    func add() {
                        let v = next
                        next += 1
                        group.addTask {
                            try await VisitPlay.play(visit: v, apis: apiPair, dispatcher: dispatcher, customer: customer)
                        }
                    }
                    for _ in 0..<Self.inFlight { add() }
                    while let visitProblems = try await group.next() {
                        problems += visitProblems
                        if next < Self.visits { add() }
                    }
                    return problems
                }
                #expect(answers.isEmpty, "unexpected answers: \(answers.prefix(10))")
                let events = try await pool.withConnection { try $0.query("SELECT count(*) AS n FROM events").first?.int("n") }
                #expect(events == Self.visits * 5)

                // The workers drain the outbox: every activity's `end` acknowledged, nothing left open.
                try await eventually("every end acknowledged and nothing pending", within: 90, pollingEvery: 0.2) {
                    for (n, child) in fleet.children.enumerated() where !child.isRunning {
                        throw Fleet.Failure("process \(n) exited: \(fleet.output(n < 2 ? "api-\(n)" : "worker-\(n - 2)"))")
                    }
                    let row = try await pool.withConnection { connection in
                        try connection.query(
                            """
                            SELECT count(*) FILTER (WHERE state IN ('pending', 'sending')) AS open,
                                   count(*) FILTER (WHERE kind = 'end' AND state = 'sent') AS ends
                            FROM deliveries
                            """
                        ).first
                    }
                    return try row?.int("open") == 0 && row?.int("ends") == Self.visits
                }

                let planned = try await pool.withConnection { connection in
                    try connection.query("SELECT lower(apns_id::text) AS apns_id, activity_id, kind, state FROM deliveries").map {
                        (
                            apnsID: try $0.string("apns_id"), activity: try $0.string("activity_id"), kind: try $0.string("kind"),
                            state: try $0.string("state")
                        )
                    }
                }
                #expect(
                    planned.filter { !["sent", "superseded"].contains($0.state) }.isEmpty,
                    "deliveries neither sent nor superseded")
                let sent = planned.filter { $0.state == "sent" }
                let accepted = fleet.simulator.deliveries().filter(\.accepted)
                let copies = Dictionary(grouping: accepted, by: { $0.apnsID.lowercased() })
                #expect(Set(copies.keys) == Set(sent.map(\.apnsID)), "APNs accepted exactly the deliveries marked sent")
                let duplicated = copies.filter { $0.value.count > 1 }
                #expect(duplicated.isEmpty, "apns-ids accepted more than once with no lease lost: \(duplicated.keys.prefix(5))")

                let byToken = Dictionary(grouping: accepted, by: { $0.deviceToken ?? "" })
                #expect(byToken.count == Self.visits)
                for (device, pushes) in byToken {
                    let ordered = pushes.sorted { $0.sequence < $1.sequence }
                    let timestamps = ordered.compactMap { $0.aps?["timestamp"]?.integerValue }
                    #expect(
                        zip(timestamps, timestamps.dropFirst()).allSatisfy { $0 < $1 },
                        "older after newer to \(device.prefix(12))")
                    #expect(ordered.filter { $0.aps?["event"]?.stringValue == "end" }.count == 1)
                    #expect(ordered.last?.aps?["event"]?.stringValue == "end")
                }
            }
        }
    }
}
