import APNsSimulator
import Foundation
import JSON
import Postgres
import Runtime
import Synchronization
import TestSupport
import Testing

/// CONTRACT §12, failover: an API and a worker process on a multi-host URL (`target_session_attrs=read-write`)
/// over the pair `scripts/pg-replica` makes (a primary and a synchronous standby). Under load, the primary
/// is stopped hard and the standby promoted: requests answer 201/204 or 503 (no other status, no dropped
/// connection), every event answered 201 is on the promoted primary, and every visit whose events were all
/// answered gets its `end` at APNs once the worker found the new primary.
@Suite(.serialized, .timeLimit(.minutes(4))) struct FailoverTests {
    @Test func postsUnderLoadThroughAFailoverLoseNoAnsweredEventAndEveryPushArrives() async throws {
        try await ReplicaPair.with { pair in
            try await Fleet.with { fleet in
                let url = try await pair.run("url")
                try await fleet.migrate(databaseURL: url)
                let dispatcher = try await fleet.dispatcherKey(databaseURL: url)
                let (_, api) = try await fleet.startAPI(databaseURL: url, name: "api")
                try fleet.startWorker(databaseURL: url, name: "worker")
                let minted = try await api.send(
                    "POST", "/v1/keys", key: dispatcher, body: ["role": "customer", "subject": "c-1"])
                let customer = try #require(minted.json["key"]?.stringValue)

                // Four clients, each playing one visit after the other until told to stop.
                let load = Load()
                let clients = (0..<4).map { client in
                    Task { await load.run(client: client, api: api, dispatcher: dispatcher, customer: customer) }
                }
                do {
                    try await eventually("20 visits played before the failover", within: 60, pollingEvery: 0.05) {
                        load.completedVisits.count >= 20
                    }
                    try await pair.run("failover")
                    let before = load.completedVisits.count
                    try await eventually("20 more visits played after the failover", within: 90, pollingEvery: 0.1) {
                        load.completedVisits.count >= before + 20
                    }
                } catch {
                    load.stop()
                    for c in clients { await c.value }
                    throw error
                }
                load.stop()
                for c in clients { await c.value }

                #expect(load.unexpected.isEmpty, "answers other than 201/204/503: \(load.unexpected.prefix(10))")
                let answered = load.answeredEvents
                #expect(!answered.isEmpty)

                // Every 201 is on the promoted primary (the URL finds it: the old one is gone).
                let stored = try await PostgresPool.withPool(PostgresConfiguration(url: url, size: 1)) { pool in
                    try await pool.withConnection { connection in
                        guard try connection.query("SELECT pg_is_in_recovery() AS r").first?.bool("r") == false else {
                            throw Fleet.Failure("the URL reached a server in recovery")
                        }
                        return Set(
                            try connection.query("SELECT stream_name, position FROM events").map {
                                "\(try $0.string("stream_name"))#\(try $0.int64("position"))"
                            })
                    }
                }
                let lost = answered.filter { !stored.contains("visit-\($0.visit)#\($0.version)") }
                #expect(
                    lost.isEmpty,
                    "of \(answered.count) events answered 201 (\(load.unavailableAnswers) requests answered 503), not on the promoted primary: \(lost.prefix(10))"
                )

                // Every visit played to the end gets its end at APNs once the worker reconnected (leases of a dead
                // connection expire after 30 s at the latest).
                let finished = Set(load.completedVisits.map { token("t\($0)") })
                try await eventually(
                    "an end at APNs for each of the \(finished.count) visits played to the end", within: 90, pollingEvery: 0.2
                ) {
                    guard fleet.children[1].isRunning else { throw Fleet.Failure("worker exited: \(fleet.output("worker"))") }
                    let ended = Set(
                        fleet.simulator.deliveries().filter { $0.accepted && $0.aps?["event"]?.stringValue == "end" }.compactMap(
                            \.deviceToken))
                    return finished.isSubset(of: ended)
                }
            }
        }
    }
}

/// The clients' shared record: what they were answered.
final class Load: Sendable {
    private struct State {
        var stopped = false
        var completed: [Int] = []
        var answered: [(visit: String, version: Int64)] = []
        var unexpected: [String] = []
        var nextVisit = 0
        var unavailable = 0
    }
    private let state = Mutex(State())

    var completedVisits: [Int] { state.withLock { $0.completed } }
    var answeredEvents: [(visit: String, version: Int64)] { state.withLock { $0.answered } }
    var unexpected: [String] { state.withLock { $0.unexpected } }
    /// Requests answered 503 (no primary reachable).
    var unavailableAnswers: Int { state.withLock { $0.unavailable } }
    func stop() { state.withLock { $0.stopped = true } }

    /// Plays visits until stopped; a 503 ends that visit (its fate is the server's to tell) and the next begins.
    func run(client: Int, api: APIClient, dispatcher: String, customer: String) async {
        while let v = state.withLock({ s -> Int? in
            guard !s.stopped else { return nil }
            s.nextVisit += 1
            return s.nextVisit
        }) {
            let id = "v-\(v)"
            let now = Int(Date().timeIntervalSince1970)
            let requests: [(String, String, String, JSONValue, Int)] =
                [
                    (
                        "POST", "/v1/visits", dispatcher,
                        [
                            "visitId": .string(id), "customerId": "c-1",
                            "attributes": ["customerFirstName": "Alex", "serviceAddress": "12 Elm Row", "jobSummary": "Boiler"],
                            "technician": ["id": "t-1", "name": "Sam", "avatarSymbol": "person", "vanDescription": "White van"],
                            "arrivalWindow": ["start": .number(Double(now + 600)), "end": .number(Double(now + 1200))],
                            "kilometresAway": 14.0,
                        ], 201
                    ),
                    (
                        "PUT", "/v1/visits/\(id)/live-activities/a-\(v)", customer,
                        ["pushToken": .string(token("t\(v)")), "environment": "sandbox", "version": 1], 204
                    ),
                ]
                + [["type": "enRoute"], ["type": "onSite"], ["type": "completed"]].map {
                    ("POST", "/v1/visits/\(id)/events", dispatcher, $0, 201)
                }
            var complete = true
            for (method, path, key, body, expect) in requests {
                let answer: (status: Int, json: JSONValue)
                do {
                    answer = try await api.send(method, path, key: key, body: body)
                } catch {
                    state.withLock { $0.unexpected.append("\(method) \(path): \(error)") }
                    complete = false
                    break
                }
                if answer.status == 503 {
                    state.withLock { $0.unavailable += 1 }
                    complete = false
                    break
                }
                guard answer.status == expect else {
                    state.withLock {
                        $0.unexpected.append("\(method) \(path) → \(answer.status) \(answer.json.serializedString())")
                    }
                    complete = false
                    break
                }
                if expect == 201, let version = answer.json["version"]?.integerValue {
                    state.withLock { $0.answered.append((id, version)) }
                }
            }
            if complete { state.withLock { $0.completed.append(v) } }
        }
    }
}
