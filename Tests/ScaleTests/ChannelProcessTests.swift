import APNsSimulator
import Foundation
import JSON
import Postgres
import Runtime
import TestSupport
import Testing

/// Contract §7 across processes: real `serve --api-only` processes on one database creating a visit's
/// broadcast channel at the project's simulator, and one killed with SIGKILL between APNs' create and
/// storing the id.
@Suite(.serialized, .timeLimit(.minutes(3))) struct ChannelProcessTests {
    static let sandbox: JSONValue = ["environment": "sandbox"]

    static func visit(_ id: String) -> JSONValue {
        let now = Double(Int(Date().timeIntervalSince1970))
        return [
            "visitId": .string(id), "customerId": "c-1",
            "attributes": ["customerFirstName": "Alex", "serviceAddress": "12 Elm Row", "jobSummary": "Boiler check"],
            "technician": [
                "id": "t-1", "name": "Sam", "avatarSymbol": "person.crop.circle", "vanDescription": "White van",
            ],
            "arrivalWindow": ["start": .number(now + 600), "end": .number(now + 1800)], "kilometresAway": 14.0,
        ]
    }

    static func creates(_ simulator: APNsSimulator) -> Int {
        simulator.deliveries().filter { $0.method == "POST" && $0.path.hasSuffix("/channels") }.count
    }

    @Test func concurrentPutsThroughTwoAPIProcessesMakeOneCreateAndOneId() async throws {
        try await withTestDatabase(poolSize: 2) { url, pool in
            try await Fleet.with { fleet in
                let dispatcher = try await fleet.dispatcherKey(databaseURL: url)
                let apis = try await fleet.startAPIs(2, databaseURL: url)
                #expect(try await apis[0].send("POST", "/v1/visits", key: dispatcher, body: Self.visit("v-race")).status == 201)
                // APNs slow to answer the create: every request arrives while it is in flight.
                fleet.simulator.inject(FaultSettings(latency: .init(milliseconds: 500, count: 1), listener: .channels))
                let answers = try await withThrowingTaskGroup(of: (Int, String?).self) { group in
                    for n in 0..<10 {
                        let api = apis[n % 2]
                        group.addTask {
                            let r = try await api.send("PUT", "/v1/visits/v-race/channel", key: dispatcher, body: Self.sandbox)
                            return (r.status, r.json["channelId"]?.stringValue)
                        }
                    }
                    var out: [(Int, String?)] = []
                    for try await answer in group { out.append(answer) }
                    return out
                }
                let read = try await apis[1].send("GET", "/v1/visits/v-race", key: dispatcher)
                let creates = Self.creates(fleet.simulator)
                let held = fleet.simulator.channels()

                #expect(answers.allSatisfy { $0.0 == 200 }, "\(answers)")
                let ids = Set(answers.compactMap(\.1))
                #expect(ids.count == 1 && answers.compactMap(\.1).count == 10)
                #expect(creates == 1)
                #expect(held == Array(ids))
                #expect(read.json["channels"]?[0]?["channelId"]?.stringValue == ids.first)
            }
        }
    }

    @Test func anAPIKilledBetweenTheCreateAndStoringTheIdLeavesNoOrphanAfterTheNextReconcile() async throws {
        try await withTestDatabase(poolSize: 2) { url, pool in
            try await Fleet.with { fleet in
                let dispatcher = try await fleet.dispatcherKey(databaseURL: url)
                let (child, api) = try await fleet.startAPI(databaseURL: url, name: "api-doomed")
                #expect(try await api.send("POST", "/v1/visits", key: dispatcher, body: Self.visit("v-killed")).status == 201)
                // The create reaches APNs (the channel exists there at once) but its answer is held back.
                fleet.simulator.inject(FaultSettings(latency: .init(milliseconds: 20_000, count: 1), listener: .channels))
                let put = Task { try? await api.send("PUT", "/v1/visits/v-killed/channel", key: dispatcher, body: Self.sandbox) }
                try await eventually("APNs created the channel and the claim is in the database", within: 30) {
                    let claimed = try await pool.withConnection { c in
                        try c.query("SELECT 1 FROM channels WHERE state = 'creating'").count
                    }
                    return claimed == 1 && fleet.simulator.channels().count == 1
                }
                child.signal(SIGKILL)
                _ = await child.wait()
                _ = await put.value
                let orphan = fleet.simulator.channels()
                // Before the creation timeout the claim may still be someone's: the reconcile spares it.
                let early = try await ChildProcess(
                    fleet.binary, ["channels", "reconcile"], environment: fleet.environment(databaseURL: url)
                ).run()
                let spared = fleet.simulator.channels()
                // The claim's process is gone for good: once the creation timeout passed (aged here, not waited for),
                // the next reconcile deletes what APNs created for it.
                _ = try await pool.withConnection { c in try c.query("UPDATE channels SET claimed_at = claimed_at - 3600") }
                let reconcile = try await ChildProcess(
                    fleet.binary, ["channels", "reconcile"], environment: fleet.environment(databaseURL: url)
                ).run()
                let remaining = fleet.simulator.channels()
                let rows = try await pool.withConnection { c in try c.query("SELECT 1 FROM channels").count }
                // A new request (another process) creates a fresh channel for the visit.
                let (second, again) = try await fleet.startAPI(databaseURL: url, name: "api-second")
                let fresh = try await again.send("PUT", "/v1/visits/v-killed/channel", key: dispatcher, body: Self.sandbox)
                _ = await second.stop()

                #expect(orphan.count == 1)
                #expect(
                    early.status == 0 && early.stdout.contains("channels reconcile: sandbox: kept 0, deleted orphans 0, forgot 0")
                )
                #expect(spared == orphan)
                #expect(reconcile.status == 0, "\(reconcile.stderr)")
                #expect(
                    reconcile.stdout.split(separator: "\n").map(String.init) == [
                        "channels reconcile: sandbox: kept 0, deleted orphans 1, forgot 0",
                        "channels reconcile: production: kept 0, deleted orphans 0, forgot 0",
                    ], "\(reconcile.stdout)")
                #expect(remaining.isEmpty)
                #expect(rows == 0)
                #expect(fresh.status == 200 && fresh.json["channelId"]?.stringValue != orphan.first)
            }
        }
    }
}
