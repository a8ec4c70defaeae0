import APIStores
import Foundation
import HTTPAPI
import JSON
import Postgres
import Runtime
import TestSupport
import Testing

/// The limits on one caller: a key's request rate, an address's failed authentications, unknown key ids
/// answered from memory, `/readyz` probing at most once a second, and bodies refused by size of members
/// or by their characters. Time is the API's manual clock.
@Suite(.timeLimit(.minutes(2))) struct RequestLimitsTests {
    static let start = 1_790_000_000.0

    @Test func theStandardLimitsAreTheContractsDefaults() {
        #expect(RequestLimits.standard.requestsPerSecond == 50)
        #expect(RequestLimits.standard.authenticationFailuresPerMinute == 20)
        #expect(RequestLimits.standard.readinessCacheSeconds == 1)
    }

    /// A key gets twice its rate at once, then 429 `rate_limited` with `Retry-After` in whole seconds; as
    /// time passes it gets its rate back. Another key is not held back by the first one's spending.
    @Test func aKeyOverItsRateIsAnswered429UntilTimeRefillsIt() async throws {
        let clock = ManualClock(now: Self.start)
        let limits = RequestLimits(requestsPerSecond: 2, authenticationFailuresPerMinute: nil, readinessCacheSeconds: 0)
        try await withAPIServer(clock: clock, limits: limits) { api in
            for i in 0..<4 {
                #expect(try await api.call("GET", "/v1/visits", key: api.dispatcher).status == 200, "request \(i) of the burst")
            }
            let limited = try await api.call("GET", "/v1/visits", key: api.dispatcher)
            #expect(limited.status == 429)
            #expect(limited.errorCode == "rate_limited")
            #expect(limited.header("Retry-After") == "1")
            #expect(try await api.call("GET", "/v1/visits", key: api.ops).status == 200, "another key has its own bucket")
            // A write over the limit is refused before it is read, let alone stored.
            let refused = try await api.schedule(uniqueID("v"))
            #expect(refused.status == 429)

            clock.advance(by: 0.5)  // one token back at 2 a second
            #expect(try await api.call("GET", "/v1/visits", key: api.dispatcher).status == 200)
            #expect(try await api.call("GET", "/v1/visits", key: api.dispatcher).status == 429)
            clock.advance(by: 10)  // full again: a burst of four, not twenty
            for _ in 0..<4 { #expect(try await api.call("GET", "/v1/visits", key: api.dispatcher).status == 200) }
            #expect(try await api.call("GET", "/v1/visits", key: api.dispatcher).status == 429)
        }
    }

    /// After the limit of failed authentications from one address within a minute, every request from it
    /// that presents a key — a good one too — answers 429 without the key being checked, until the minute
    /// has passed; other addresses, and requests without a key, are not affected.
    @Test func anAddressThatFailsTooOftenIsLockedOutForTheMinute() async throws {
        let clock = ManualClock(now: Self.start)
        let limits = RequestLimits(requestsPerSecond: nil, authenticationFailuresPerMinute: 3, readinessCacheSeconds: 0)
        try await withAPIServer(clock: clock, limits: limits) { api in
            let wrong = "lv_" + String(repeating: "a", count: 16) + "_" + String(repeating: "0", count: 48)
            let forged = String(api.dispatcher.prefix(20)) + String(repeating: "0", count: 48)
            let revoked = try await api.key(.technician, "t-1")
            let revokedId = String(revoked.split(separator: "_")[1])
            _ = try await api.pool.withConnection { try APIKeys.revoke(keyId: revokedId, allowedRoles: Role.allCases, on: $0) }

            for key in [wrong, forged, revoked] {
                #expect(try await api.call("GET", "/v1/visits", key: key).status == 401)
            }
            clock.advance(by: 20)
            let locked = try await api.call("GET", "/v1/visits", key: api.dispatcher)
            #expect(locked.status == 429)
            #expect(locked.errorCode == "rate_limited")
            #expect(locked.header("Retry-After") == "40", "the minute runs from the first of the three failures")
            #expect(try await api.call("GET", "/healthz", key: nil).status == 200, "no key, no lockout")

            let other = RawHTTPClient(port: api.client.port, source: "127.0.0.2")
            let elsewhere = try await other.send("GET", "/v1/visits", headers: [("Authorization", "Bearer \(api.dispatcher)")])
            #expect(elsewhere.status == 200, "another address is not locked out")

            clock.advance(by: 39)
            #expect(try await api.call("GET", "/v1/visits", key: api.dispatcher).status == 429)
            clock.advance(by: 1)
            #expect(try await api.call("GET", "/v1/visits", key: api.dispatcher).status == 200)
        }
    }

    /// The first request with an unknown key id reads the database; the next ones with that id do not,
    /// with the revocation listener running or not. A key minted afterwards works at once.
    @Test(arguments: [false, true])
    func anUnknownKeyIdCostsOneQuery(listening: Bool) async throws {
        let cache = APIKeyCache()
        try await withAPIServer(keyCache: cache, listenForRevocations: listening) { api in
            if listening { try await eventually("the key cache listening") { cache.isActive } }
            let metrics = api.environment.metrics
            func lookups(_ result: String) -> Double {
                metrics.value(APIKeyRegistry.lookupsMetric, labels: ["result": result]) ?? 0
            }
            let unknown = "lv_" + String(repeating: "b", count: 16) + "_" + String(repeating: "1", count: 48)
            #expect(try await api.call("GET", "/v1/visits", key: unknown).status == 401)
            #expect(lookups("missing") == 1)
            for _ in 0..<5 { #expect(try await api.call("GET", "/v1/visits", key: unknown).status == 401) }
            #expect(lookups("missing") == 1, "later requests with that id read no row")

            let minted = try await api.call(
                "POST", "/v1/keys", key: api.dispatcher, json: #"{"role":"technician","subject":"t-9"}"#)
            #expect(minted.status == 201)
            let key = try #require(minted.json?["key"] as? String)
            #expect(try await api.call("GET", "/v1/visits", key: key).status == 200)
            let elsewhere = try await api.key(.technician, "t-8")  // as `livevisits keys create` does
            #expect(try await api.call("GET", "/v1/visits", key: elsewhere).status == 200)
        }
    }

    /// `/readyz` probes at most once a second: within the second it repeats its answer, after it it looks again.
    @Test func readinessIsProbedAtMostOnceASecond() async throws {
        let clock = ManualClock(now: Self.start)
        let limits = RequestLimits(requestsPerSecond: nil, authenticationFailuresPerMinute: nil, readinessCacheSeconds: 1)
        try await withAPIServer(clock: clock, limits: limits) { api in
            #expect(try await api.call("GET", "/readyz", key: nil).status == 200)
            _ = try await api.pool.withConnection { c in
                try c.query(
                    "UPDATE schema_migrations SET checksum = 'changed' WHERE version = (SELECT max(version) FROM schema_migrations)"
                )
            }
            clock.advance(by: 0.9)
            #expect(try await api.call("GET", "/readyz", key: nil).status == 200, "the answer of 0.9 s ago")
            clock.advance(by: 0.1)
            let probed = try await api.call("GET", "/readyz", key: nil)
            #expect(probed.status == 503)
            #expect(probed.errorCode == "migrations_changed")
        }
    }

    /// A body with more than 1,000 members in one object answers 422 naming the limit (the 57 KB body of
    /// 6,500 keys that once held the polling thread for a second), with or without an Idempotency-Key.
    @Test func aBodyOverTheMemberCapIs422() async throws {
        try await withAPIServer { api in
            let keys = (0..<6_500).map { #""k\#($0)":0"# }.joined(separator: ",")
            for headers in [[], [("Idempotency-Key", uniqueID("k"))]] {
                let answer = try await api.call("POST", "/v1/visits", key: api.dispatcher, json: "{\(keys)}", headers: headers)
                #expect(answer.status == 422)
                #expect(answer.errorCode == "invalid_body")
                #expect(answer.text.contains("1000"), "\(answer.text)")
            }
        }
    }

    /// Control and bidirectional characters in free text answer 422 naming the field.
    @Test(arguments: [
        ("attributes.customerFirstName", "Al\u{1B}[2Jex"), ("attributes.jobSummary", "Fix \u{202E}reliob"),
        ("technician.name", "Sam\u{07}"),
    ])
    func freeTextWithControlCharactersIs422(_ field: String, _ value: String) async throws {
        try await withAPIServer { api in
            var visit = try JSONValue.parse(APIServer.visitJSON(uniqueID("v")))
            let path = field.split(separator: ".").map(String.init)
            guard case .object(var outer) = visit, let i = outer.firstIndex(where: { $0.key == path[0] }),
                case .object(var inner) = outer[i].value, let j = inner.firstIndex(where: { $0.key == path[1] })
            else { throw RawHTTPError(description: "no \(field) in the visit") }
            inner[j].value = .string(value)
            outer[i].value = .object(inner)
            visit = .object(outer)
            let answer = try await api.call("POST", "/v1/visits", key: api.dispatcher, json: visit.serializedString())
            #expect(answer.status == 422)
            #expect(answer.text.contains(field), "\(answer.text)")
        }
    }
}
