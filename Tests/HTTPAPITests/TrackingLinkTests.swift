import APIStores
import Foundation
import HTTPAPI
import PersonalData
import Postgres
import Runtime
import TestSupport
import Testing

/// Tracking links: `POST`/`DELETE /v1/visits/{id}/tracking-link`, `GET /track/<token>` and its `/state`.
@Suite(.timeLimit(.minutes(5))) struct TrackingLinkTests {
    /// Makes a link as `key` (the dispatcher by default) and returns the answer.
    static func link(_ api: APIServer, _ visitId: String, key: String? = nil) async throws -> RawResponse {
        try await api.call("POST", "/v1/visits/\(visitId)/tracking-link", key: key ?? api.dispatcher)
    }

    /// The `url` of a 201.
    static func url(_ answer: RawResponse) throws -> String {
        #expect(answer.status == 201, "\(answer.text)")
        return try #require(answer.json?["url"] as? String)
    }

    static func token(_ url: String) -> String { String(url.dropFirst("/track/".count)) }

    static func lookups(_ api: APIServer, _ result: String) -> Double {
        api.environment.metrics.value("livevisits_tracking_lookups_total", labels: ["result": result]) ?? 0
    }

    @Test func aLinkShowsTheCardAndNothingThatNamesTheVisitOrTheCustomer() async throws {
        let file = try PersonalDataTests.keyFile()
        try await withAPIServer(personalData: PersonalDataKeys(current: file.key)) { api in
            let visit = uniqueID("v")
            try await api.schedule(visit)
            let created = try await Self.link(api, visit)
            #expect(created.json?["expiresAt"] is NSNull, "no end yet: null")
            let url = try Self.url(created)
            let token = Self.token(url)
            #expect(Base64URL.decode(token)?.count ?? 0 >= 16, "at least 128 random bits")

            let found = Self.lookups(api, "found")
            let state = try await api.call("GET", url + "/state", key: nil)
            #expect(state.status == 200, "\(state.text)")
            let json = try #require(state.json)
            #expect(
                Set(json.keys) == [
                    "technicianName", "avatarSymbol", "vanDescription", "arrivalStartEpoch", "arrivalEndEpoch", "status",
                    "kilometresAway", "jobSummary", "staleDate", "dismissal",
                ])
            #expect(json["jobSummary"] as? String == "Boiler check", "opened from its sealed form")
            #expect(json["technicianName"] as? String == "Sam")
            for secret in [visit, "c-1", "t-1", "Alex", "12 Elm Row", "enc:v1:"] {
                #expect(!state.text.contains(secret), "\(secret) is not in the state")
            }
            #expect(state.header("Content-Security-Policy")?.contains("script-src 'self'") == true)
            #expect(state.header("Referrer-Policy") == "no-referrer")
            #expect(Self.lookups(api, "found") == found + 1)

            let page = try await api.call("GET", url, key: nil)
            #expect(page.status == 200)
            #expect(page.header("Content-Type")?.hasPrefix("text/html") == true)
            #expect(page.header("Content-Security-Policy")?.contains("default-src 'none'") == true)
            #expect(page.header("Referrer-Policy") == "no-referrer")
            #expect(page.header("X-Content-Type-Options") == "nosniff")
            #expect(!page.text.contains("<script>"), "no inline script")
            for file in ["/tracking/track.js", "/tracking/track.css"] {
                let asset = try await api.call("GET", file, key: nil)
                #expect(asset.status == 200, "\(file)")
                #expect(asset.header("Content-Security-Policy") != nil)
            }

            // Only the hash is stored; the logs and metrics name the route, not the token.
            let stored = try await api.pool.withConnection { c in
                try c.query("SELECT token_hash, visit_id FROM tracking_links WHERE visit_id = \(visit)").first
            }
            #expect(stored?["token_hash"] == TrackingLinks.hash(token))
            let all = try await api.pool.withConnection { c in
                try c.query("SELECT t::text AS row FROM tracking_links t").rows.compactMap { $0["row"] }
            }
            #expect(!all.contains { $0.contains(token) }, "no row holds the token")
            let metrics = await api.environment.metrics.render()
            #expect(!metrics.contains(token))
            #expect(metrics.contains("/track/{token}/state"))
        }
    }

    @Test func aNewLinkReplacesTheOldAndRevokingEndsIt() async throws {
        try await withAPIServer { api in
            let visit = uniqueID("v")
            try await api.schedule(visit)
            let first = try Self.url(try await Self.link(api, visit))
            let second = try Self.url(try await Self.link(api, visit))
            #expect(first != second)
            #expect(try await api.call("GET", first + "/state", key: nil).status == 404, "the old URL stops working")
            #expect(try await api.call("GET", second + "/state", key: nil).status == 200)

            let revoked = try await api.call("DELETE", "/v1/visits/\(visit)/tracking-link", key: api.dispatcher)
            #expect(revoked.status == 204)
            #expect(try await api.call("GET", second + "/state", key: nil).status == 404)
            let gone = try await api.call("GET", second, key: nil)
            #expect(gone.status == 404)
            #expect(gone.header("Content-Type")?.hasPrefix("text/html") == true)
            #expect(gone.text.contains("expired or is not valid"))
            #expect(gone.header("Referrer-Policy") == "no-referrer")
        }
    }

    @Test func rolesTheVisitsCustomerDispatchersAndOps() async throws {
        try await withAPIServer { api in
            let visit = uniqueID("v")
            let customer = uniqueID("c")
            try await api.schedule(visit, customer: customer)
            let own = try await api.key(.customer, customer)
            let other = try await api.key(.customer, uniqueID("c"))
            let technician = try await api.key(.technician, "t-1")
            #expect(try await Self.link(api, visit, key: own).status == 201)
            #expect(try await Self.link(api, visit, key: api.ops).status == 201)
            let othersAnswer = try await Self.link(api, visit, key: other)
            #expect(othersAnswer.status == 404, "another customer's visit is not found")
            #expect(try await Self.link(api, uniqueID("v"), key: own).status == 404)
            #expect(try await Self.link(api, visit, key: technician).status == 403)
            #expect(try await api.call("POST", "/v1/visits/\(visit)/tracking-link", key: nil).status == 401)
            #expect(
                try await api.call("DELETE", "/v1/visits/\(visit)/tracking-link", key: other).status == 404)
            #expect(try await api.call("DELETE", "/v1/visits/\(visit)/tracking-link", key: own).status == 204)
        }
    }

    @Test func anEndedVisitGetsNoNewLinkAndItsLinkLapsesAnHourAfterTheEnd() async throws {
        let clock = ManualClock(now: Date().timeIntervalSince1970.rounded(.down))
        try await withAPIServer(clock: clock) { api in
            let visit = uniqueID("v")
            try await api.schedule(visit)
            let url = try Self.url(try await Self.link(api, visit))
            #expect(try await api.post(visit, #"{"type":"onSite"}"#).status == 201)
            #expect(try await api.post(visit, #"{"type":"completed"}"#).status == 201)

            let refused = try await Self.link(api, visit)
            #expect(refused.status == 409)
            #expect(refused.errorCode == "visit_ended")

            let ended = try await api.call("GET", url + "/state", key: nil)
            #expect(ended.status == 200)
            #expect(ended.json?["status"] as? String == "completed")
            #expect(ended.json?["dismissal"] is [String: Any], "an ended visit carries its dismissal")
            clock.advance(by: 3599)
            #expect(try await api.call("GET", url + "/state", key: nil).status == 200)
            clock.advance(by: 1)
            let lapsed = try await api.call("GET", url + "/state", key: nil)
            #expect(lapsed.status == 404)
            let unknown = try await api.call("GET", "/track/" + String(repeating: "A", count: 32) + "/state", key: nil)
            let malformed = try await api.call("GET", "/track/nope/state", key: nil)
            #expect(lapsed.text == unknown.text, "lapsed and unknown answer alike")
            #expect(malformed.text == unknown.text)
            #expect(unknown.status == 404)
        }
    }

    @Test func anErasedCustomersJobSummaryReadsNull() async throws {
        let file = try PersonalDataTests.keyFile()
        try await withAPIServer(personalData: PersonalDataKeys(current: file.key)) { api in
            let visit = uniqueID("v")
            let customer = uniqueID("c")
            try await api.schedule(visit, customer: customer)
            let url = try Self.url(try await Self.link(api, visit))
            #expect(try await api.post(visit, #"{"type":"cancelled","reason":"No access"}"#).status == 201)
            #expect(try await api.call("DELETE", "/v1/customers/\(customer)", key: api.ops).status == 204)
            let state = try await api.call("GET", url + "/state", key: nil)
            #expect(state.status == 200, "\(state.text)")
            #expect(state.json?["jobSummary"] is NSNull)
        }
    }

    @Test func failedLookupsAreCountedAndLockTheAddressOut() async throws {
        let clock = ManualClock(now: Date().timeIntervalSince1970.rounded(.down))
        let limits = RequestLimits(requestsPerSecond: nil, authenticationFailuresPerMinute: 3, readinessCacheSeconds: 0)
        try await withAPIServer(clock: clock, limits: limits) { api in
            let visit = uniqueID("v")
            try await api.schedule(visit)
            let url = try Self.url(try await Self.link(api, visit))
            let before = Self.lookups(api, "not_found")
            for n in 0..<3 {
                let guess = "/track/" + String(repeating: "B", count: 31) + String(n) + "/state"
                #expect(try await api.call("GET", guess, key: nil).status == 404)
            }
            #expect(Self.lookups(api, "not_found") == before + 3)
            let locked = try await api.call("GET", url + "/state", key: nil)
            #expect(locked.status == 429, "even a good link, from a guessing address")
            #expect(locked.errorCode == "rate_limited")
            #expect(locked.header("Retry-After") == "60")

            let other = RawHTTPClient(port: api.client.port, source: "127.0.0.2")
            #expect(try await other.send("GET", url + "/state", headers: []).status == 200, "another address is not held")
            clock.advance(by: 60)
            #expect(try await api.call("GET", url + "/state", key: nil).status == 200)
        }
    }
}
