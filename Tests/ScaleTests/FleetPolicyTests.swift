import APNsSimulator
import Foundation
import JSON
import Postgres
import Runtime
import TestSupport
import Testing

/// CONTRACT §8 across processes (§12): the push budget and the progress cadence are the fleet's, not one
/// worker's. One API and three `worker` processes, with rules that allow one priority-10 push per hour
/// and pace progress updates 2 s apart: every activity gets its `nearby` alert at 10 and its `onSite`
/// alert downgraded to 5 (whichever worker sends it), and four quick progress events reach each activity
/// as at most two pushes, at least the interval apart, the last one carrying the latest state.
@Suite(.timeLimit(.minutes(3))) struct FleetPolicyTests {
    static let visits = 30
    static let interval = 2.0

    @Test func budgetAndCadenceHoldAcrossThreeWorkers() async throws {
        try await withTestDatabase(poolSize: 2) { url, pool in
            try await Fleet.with { fleet in
                // The project's rules with a tiny budget and a short progress interval.
                let projections = fleet.folder.appendingPathComponent("projections")
                try FileManager.default.createDirectory(at: projections, withIntermediateDirectories: true)
                for file in try FileManager.default.contentsOfDirectory(atPath: TestDatabase.projectionsDirectory.path) {
                    try FileManager.default.copyItem(
                        at: TestDatabase.projectionsDirectory.appendingPathComponent(file),
                        to: projections.appendingPathComponent(file))
                }
                let rulesFile = projections.appendingPathComponent("rules.json")
                guard case .object(var members) = try JSONValue.parse(Data(contentsOf: rulesFile)) else {
                    throw Fleet.Failure("rules.json is not an object")
                }
                members.removeAll { $0.key == "budget" || $0.key == "progressIntervalSeconds" }
                members.append(JSONMember("budget", ["priority10PerHour": 1, "priority10PerHourFrequent": 1]))
                members.append(JSONMember("progressIntervalSeconds", .number(Self.interval)))
                try Data(JSONValue.object(members).serialized()).write(to: rulesFile)
                let rules = ["LIVEVISITS_PROJECTIONS_DIR": projections.path]

                let dispatcher = try await fleet.dispatcherKey(databaseURL: url)
                let (_, api) = try await fleet.startAPI(databaseURL: url, name: "api", adding: rules)
                for n in 0..<3 {
                    try fleet.startWorker(databaseURL: url, name: "worker-\(n)", adding: rules)
                }
                let minted = try await api.send(
                    "POST", "/v1/keys", key: dispatcher, body: ["role": "customer", "subject": "c-1"])
                let customer = try #require(minted.json["key"]?.stringValue)

                var problems: [String] = []
                func post(_ method: String, _ path: String, key: String, _ body: JSONValue, expect: Int) async throws {
                    let answer = try await api.send(method, path, key: key, body: body)
                    if answer.status != expect { problems.append("\(method) \(path) → \(answer.status)") }
                }
                func allVisits(_ body: (Int) async throws -> Void) async throws {
                    for v in 0..<Self.visits { try await body(v) }
                }
                /// Waits until every visit's activity has had an accepted push satisfying `matches`.
                func everyActivityGot(_ what: String, _ matches: @escaping @Sendable (SimulatedDelivery) -> Bool) async throws {
                    try await eventually("every activity got \(what)", within: 60, pollingEvery: 0.1) {
                        for (n, child) in fleet.children.enumerated() where !child.isRunning {
                            throw Fleet.Failure("process \(n) exited: \(fleet.output(n == 0 ? "api" : "worker-\(n - 1)"))")
                        }
                        let reached = Set(
                            fleet.simulator.deliveries().filter { $0.accepted && matches($0) }.compactMap(\.deviceToken))
                        return reached.count == Self.visits
                    }
                }
                let now = Int(Date().timeIntervalSince1970)
                try await allVisits { v in
                    let visit: JSONValue = [
                        "visitId": .string("v-\(v)"), "customerId": "c-1",
                        "attributes": [
                            "customerFirstName": "Alex", "serviceAddress": "12 Elm Row", "jobSummary": "Boiler check",
                        ],
                        "technician": ["id": "t-1", "name": "Sam", "avatarSymbol": "person", "vanDescription": "White van"],
                        "arrivalWindow": ["start": .number(Double(now + 600)), "end": .number(Double(now + 1200))],
                        "kilometresAway": 14.0,
                    ]
                    try await post("POST", "/v1/visits", key: dispatcher, visit, expect: 201)
                    try await post(
                        "PUT", "/v1/visits/v-\(v)/live-activities/a-\(v)", key: customer,
                        ["pushToken": .string(token("fp\(v)")), "environment": "sandbox", "version": 1], expect: 204)
                    try await post("POST", "/v1/visits/v-\(v)/events", key: dispatcher, ["type": "enRoute"], expect: 201)
                }
                try await everyActivityGot("its enRoute update") { $0.aps?["content-state"]?["status"]?.stringValue == "enRoute" }
                // Four progress events in quick succession per visit: the first goes at once, the rest wait for the
                // interval and go as one, with the latest distance.
                try await allVisits { v in
                    for km in [5.0, 4.0, 3.0, 2.0] {
                        try await post(
                            "POST", "/v1/visits/v-\(v)/events", key: dispatcher,
                            ["type": "progress", "kilometresAway": .number(km)],
                            expect: 201)
                    }
                }
                try await everyActivityGot("the latest progress") {
                    $0.aps?["content-state"]?["kilometresAway"]?.doubleValue == 2
                }
                for step: JSONValue in [["type": "nearby", "kilometresAway": 1.0], ["type": "onSite"]] {
                    try await allVisits { v in
                        try await post("POST", "/v1/visits/v-\(v)/events", key: dispatcher, step, expect: 201)
                    }
                    let status = step["type"]?.stringValue
                    try await everyActivityGot("its \(status ?? "") update") {
                        $0.aps?["content-state"]?["status"]?.stringValue == status
                    }
                }
                #expect(problems.isEmpty, "unexpected answers: \(problems.prefix(10))")

                let byToken = Dictionary(grouping: fleet.simulator.deliveries().filter(\.accepted), by: { $0.deviceToken ?? "" })
                #expect(byToken.count == Self.visits)
                for (device, pushes) in byToken {
                    let ordered = pushes.sorted { $0.sequence < $1.sequence }
                    func priority(_ d: SimulatedDelivery) -> String? { d.headers.first { $0.name == "apns-priority" }?.value }
                    func status(_ d: SimulatedDelivery) -> String? { d.aps?["content-state"]?["status"]?.stringValue }
                    let name = String(device.prefix(12))
                    // Budget: the one priority-10 push of the hour is the nearby alert; the onSite alert goes at 5.
                    #expect(ordered.filter { priority($0) == "10" }.map(status) == ["nearby"], "priority-10 pushes to \(name)")
                    #expect(ordered.first { status($0) == "onSite" }.map(priority) == "5", "onSite downgraded for \(name)")
                    // Cadence: the progress pushes (enRoute with a distance under the booked 14 km).
                    let progress = ordered.filter {
                        status($0) == "enRoute" && ($0.aps?["content-state"]?["kilometresAway"]?.doubleValue ?? 14) < 14
                    }
                    #expect((1...2).contains(progress.count), "\(progress.count) progress pushes to \(name)")
                    #expect(
                        progress.last?.aps?["content-state"]?["kilometresAway"]?.doubleValue == 2, "latest progress to \(name)")
                    let gaps = zip(progress, progress.dropFirst()).map { $1.receivedAt - $0.receivedAt }
                    // Paced by the database's clock, received by ours: a send's latency is the only slack.
                    #expect(gaps.allSatisfy { $0 >= Self.interval - 0.5 }, "progress pushes to \(name) \(gaps) s apart")
                }
            }
        }
    }
}
