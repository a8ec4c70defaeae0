import Foundation
import JSON
import Runtime
import TestSupport
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Issue 18's bad input "a standby that is not synchronous when the docs promise no loss": a primary
/// whose synchronous standby is gone holds every commit. `/readyz` says so by name, writes answer 503 at
/// the pool's work timeout instead of hanging, and once the standby is back both recover by themselves.
@Suite(.serialized, .timeLimit(.minutes(3))) struct SynchronousStandbyTests {
    @Test func aLostSynchronousStandbyIsNamedByReadyzAndWritesAnswer503InsteadOfHanging() async throws {
        try await ReplicaPair.with { pair in
            try await Fleet.with { fleet in
                let url = try await pair.run("url")
                try await fleet.migrate(databaseURL: url)
                let dispatcher = try await fleet.dispatcherKey(databaseURL: url)
                let (apiChild, api) = try await fleet.startAPI(
                    databaseURL: url, name: "api", adding: ["LIVEVISITS_DB_WORK_TIMEOUT_SECONDS": "2"])

                let ready = try await api.send("GET", "/readyz")
                #expect(ready.status == 200)
                #expect(ready.json["checks"]?["replication"]?.stringValue == "synchronous")
                #expect(ready.json["checks"]?["standbys"]?.doubleValue == 1)
                func visit(_ id: String) -> JSONValue {
                    let now = Double(Int(Date().timeIntervalSince1970))
                    return [
                        "visitId": .string(id), "customerId": "c-1",
                        "attributes": ["customerFirstName": "Alex", "serviceAddress": "1 Elm Row", "jobSummary": "Boiler check"],
                        "technician": ["id": "t-1", "name": "Sam", "avatarSymbol": "person", "vanDescription": "White van"],
                        "arrivalWindow": ["start": .number(now + 600), "end": .number(now + 1200)], "kilometresAway": 10,
                    ]
                }
                #expect(try await api.send("POST", "/v1/visits", key: dispatcher, body: visit("v-before")).status == 201)

                try await pair.run("stop-standby")
                try await eventually("/readyz names the missing synchronous standby", within: 30, pollingEvery: 0.2) {
                    let answer = try await api.send("GET", "/readyz")
                    return answer.status == 503 && answer.json["error"]?["code"]?.stringValue == "synchronous_standby_missing"
                }
                // A write waits in its commit for the standby: answered 503 at the work timeout, not held forever
                // (the client's own timeout is 30 s; the work timeout 2 s).
                let held = try await api.send("POST", "/v1/visits", key: dispatcher, body: visit("v-during"))
                #expect(held.status == 503, "\(held.json)")
                let metrics = try await metricsText(api)
                #expect(metrics.contains("livevisits_database_synchronous_standbys_missing 1"))
                #expect(metrics.contains("livevisits_database_work_timeouts_total"))
                #expect(apiChild.isRunning)

                try await pair.run("start-standby")
                try await eventually("/readyz ready again once the standby is back", within: 30, pollingEvery: 0.2) {
                    try await api.send("GET", "/readyz").status == 200
                }
                #expect(try await api.send("POST", "/v1/visits", key: dispatcher, body: visit("v-after")).status == 201)
            }
        }
    }

    private func metricsText(_ api: APIClient) async throws -> String {
        guard let url = URL(string: api.baseURL + "/metrics") else { throw Fleet.Failure("bad URL") }
        let (data, _) = try await URLSession.shared.data(for: URLRequest(url: url, timeoutInterval: 10))
        return String(decoding: data, as: UTF8.self)
    }
}
