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

    // MARK: answered from memory

    /// A link made and looked up once, its card remembered: the state answer comes from the process's memory.
    static func remembered(_ api: APIServer, _ visit: String) async throws -> String {
        try await api.schedule(visit)
        let url = try Self.url(try await Self.link(api, visit))
        let first = try await api.call("GET", url + "/state", key: nil)
        #expect(first.status == 200, "\(first.text)")
        let cards = api.environment.trackingLinks.cards
        // A card is remembered by an ask answered while the memory serves: one that came before the first pass
        // finished (a loaded machine) is not, so ask again until it is.
        try await eventually(
            "the memory answers and holds the card", within: 20, pollingEvery: 0.05,
            between: { _ = try await api.call("GET", url + "/state", key: nil) }
        ) { cards.isServing && cards.count >= 1 }
        return url
    }

    @Test func anEventAppendedInAnotherInstanceReachesTheRememberedStateWithinTwoSeconds() async throws {
        try await withAPIServer { first in
            try await withAPIServer(databaseURL: first.databaseURL) { second in
                let visit = uniqueID("v")
                let url = try await Self.remembered(first, visit)
                let before = try await first.call("GET", url + "/state", key: nil)
                #expect(before.json?["status"] as? String == "scheduled")
                #expect(before.header("ETag") == "\"1\"")
                #expect(try await second.post(visit, #"{"type":"enRoute"}"#).status == 201)
                try await eventually("the first instance's state shows the second's event", within: 2) {
                    let now = try await first.call("GET", url + "/state", key: nil)
                    return now.json?["status"] as? String == "enRoute" && now.header("ETag") == "\"2\""
                }
                #expect(first.environment.trackingLinks.cards.isServing, "answered from memory throughout")
            }
        }
    }

    /// The log's order waits for the oldest open transaction of the whole cluster; a page must not.
    @Test func anEventReachesTheRememberedStateWhileAnotherTransactionStaysOpen() async throws {
        try await withAPIServer { api in
            let visit = uniqueID("v")
            let url = try await Self.remembered(api, visit)
            // A transaction with an id, open until the check is done: the snapshot horizon stays below it.
            let held = try PostgresConnection(url: api.databaseURL)
            try held.execute(script: "BEGIN")
            try held.query("SELECT pg_current_xact_id()")
            defer { try? held.execute(script: "ROLLBACK") }
            // Two passes since: the card's first re-read (a card newly remembered is read again) is behind it.
            let cards = api.environment.trackingLinks.cards
            let passes = cards.passesFinished
            try await eventually("two more passes over the log") { cards.passesFinished >= passes + 2 }
            #expect(try await api.post(visit, #"{"type":"enRoute"}"#).status == 201)
            try await eventually("the state shows the event behind the open transaction", within: 2) {
                let now = try await api.call("GET", url + "/state", key: nil)
                return now.json?["status"] as? String == "enRoute"
            }
            #expect(api.environment.trackingLinks.cards.isServing, "answered from memory throughout")
        }
    }

    @Test func aRevokeOrAReplacementInAnotherInstanceStopsTheTokenWithinTwoSeconds() async throws {
        try await withAPIServer { first in
            try await withAPIServer(databaseURL: first.databaseURL) { second in
                let visit = uniqueID("v")
                let url = try await Self.remembered(second, visit)
                // Replaced through the first: the second stops answering the old token.
                let replacement = try Self.url(try await Self.link(first, visit))
                try await eventually("the second instance refuses the replaced token", within: 2) {
                    try await second.call("GET", url + "/state", key: nil).status == 404
                }
                #expect(try await second.call("GET", replacement + "/state", key: nil).status == 200)
                try await eventually("the second instance remembers the new link", within: 10) {
                    second.environment.trackingLinks.cards.isServing
                }
                // Revoked through the first: the same.
                #expect(try await first.call("DELETE", "/v1/visits/\(visit)/tracking-link", key: first.dispatcher).status == 204)
                try await eventually("the second instance refuses the revoked token", within: 2) {
                    try await second.call("GET", replacement + "/state", key: nil).status == 404
                }
            }
        }
    }

    @Test func anUnchangedStateAnswers304WithoutABody() async throws {
        try await withAPIServer { api in
            let url = try await Self.remembered(api, uniqueID("v"))
            let tag = try #require(try await api.call("GET", url + "/state", key: nil).header("ETag"))
            let unchanged = try await api.call("GET", url + "/state", key: nil, headers: [("If-None-Match", tag)])
            #expect(unchanged.status == 304)
            #expect(unchanged.text.isEmpty)
            #expect(unchanged.header("ETag") == tag)
            #expect(unchanged.header("Referrer-Policy") == "no-referrer")
            #expect(unchanged.header("Content-Security-Policy") != nil)
            let other = try await api.call("GET", url + "/state", key: nil, headers: [("If-None-Match", "\"99\"")])
            #expect(other.status == 200)
            let bad = try await api.call("GET", url + "/state?after=soon", key: nil)
            #expect(bad.status == 422)
            #expect(bad.errorCode == "invalid_value")
        }
    }

    @Test func aHeldRequestIsAnsweredWhenTheCardChanges() async throws {
        try await withAPIServer { api in
            let visit = uniqueID("v")
            let url = try await Self.remembered(api, visit)
            let cards = api.environment.trackingLinks.cards
            let held = Task { try await api.call("GET", url + "/state?after=1", key: nil, headers: [("If-None-Match", "\"1\"")]) }
            try await eventually("the request is held", within: 10) { cards.holding == 1 }
            #expect(try await api.post(visit, #"{"type":"enRoute"}"#).status == 201)
            let answer = try await held.value
            #expect(answer.status == 200)
            #expect(answer.json?["status"] as? String == "enRoute")
            #expect(answer.header("ETag") == "\"2\"")
            // Asking after an older version answers at once.
            let behind = try await api.call("GET", url + "/state?after=1", key: nil)
            #expect(behind.status == 200)
            #expect(cards.holding == 0)
        }
    }

    @Test func aHeldRequestIsAnsweredAtItsDeadlineAndWhenItsLinkIsRevoked() async throws {
        let clock = ManualClock(now: Date().timeIntervalSince1970.rounded(.down))
        try await withAPIServer(clock: clock) { api in
            let visit = uniqueID("v")
            let url = try await Self.remembered(api, visit)
            let cards = api.environment.trackingLinks.cards
            let held = Task { try await api.call("GET", url + "/state?after=1", key: nil, headers: [("If-None-Match", "\"1\"")]) }
            try await eventually("the request is held", within: 10) { cards.holding == 1 }
            clock.advance(by: cards.holdSeconds)
            let answer = try await held.value
            #expect(answer.status == 304, "nothing changed: \(answer.text)")
            #expect(answer.header("ETag") == "\"1\"")

            let again = Task { try await api.call("GET", url + "/state?after=1", key: nil) }
            try await eventually("the request is held again", within: 10) { cards.holding == 1 }
            #expect(try await api.call("DELETE", "/v1/visits/\(visit)/tracking-link", key: api.dispatcher).status == 204)
            #expect(try await again.value.status == 404, "the revoke answers the held request")
        }
    }

    @Test func stoppingTheMemoryReleasesHeldRequests() async throws {
        try await withAPIServer { api in
            let token = Self.token(try await Self.remembered(api, uniqueID("v")))
            // A clock that never moves: only the stop can release the wait.
            let cards = TrackingCards(pool: api.pool, clock: ManualClock(now: 0))
            let links = TrackingLinks(pool: api.pool, cards: cards)
            let listeners = cards.listeners(url: api.databaseURL)
            let held = try await withRunning({ try await listeners[0].run() }) { _ in
                try await withRunning({ try await cards.run() }) { _ in
                    try await eventually("the memory answers", within: 10) { cards.isServing }
                    let now = Int64(Date().timeIntervalSince1970)
                    _ = try await links.lookup(token: token, now: now)
                    let shown = try #require(try await links.lookup(token: token, now: now))
                    let held = Task { await links.waitForChange(token: token, beyond: shown) }
                    try await eventually("the wait is held", within: 10) { cards.holding == 1 }
                    return held
                }
            }
            try await eventually("released when the memory stopped", within: 2) { cards.holding == 0 }
            await held.value
        }
    }

    @Test func pastTheMostHeldARequestIsAnsweredAtOnce() async throws {
        try await withAPIServer { api in
            let token = Self.token(try await Self.remembered(api, uniqueID("v")))
            let cards = TrackingCards(pool: api.pool, clock: ManualClock(now: 0), maximumHeld: 1)
            let links = TrackingLinks(pool: api.pool, cards: cards)
            let listeners = cards.listeners(url: api.databaseURL)
            try await withRunning({ try await listeners[0].run() }) { _ in
                try await withRunning({ try await cards.run() }) { _ in
                    try await eventually("the memory answers", within: 10) { cards.isServing }
                    let now = Int64(Date().timeIntervalSince1970)
                    _ = try await links.lookup(token: token, now: now)
                    let shown = try #require(try await links.lookup(token: token, now: now))
                    let first = Task { await links.waitForChange(token: token, beyond: shown) }
                    try await eventually("the first wait is held", within: 10) { cards.holding == 1 }
                    // The second returns at once (its clock never moves, so only the cap can end it).
                    await links.waitForChange(token: token, beyond: shown)
                    #expect(cards.holding == 1)
                    first.cancel()
                    await first.value
                    #expect(cards.holding == 0, "a cancelled wait leaves")
                }
            }
        }
    }
}
