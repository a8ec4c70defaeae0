import Foundation
import Runtime
import Testing

/// A deterministic, seeded fuzz pass over every route: malformed JSON, wrong types, huge and truncated
/// bodies, bad UTF-8, bad path parameters and headers. No answer may be a 5xx other than 503, and the
/// server must still serve afterwards.
@Suite(.timeLimit(.minutes(5))) struct FuzzTests {
    /// Runtime's SplitMix64: small, seedable, the same sequence on every run.
    struct Seeded {
        var generator: SplitMix64
        init(state: UInt64) { generator = SplitMix64(seed: state) }
        mutating func next() -> UInt64 { generator.next() }
        mutating func below(_ n: Int) -> Int { Int(next() % UInt64(n)) }
        mutating func pick<T>(_ items: [T]) -> T { items[below(items.count)] }
        mutating func bytes(_ n: Int) -> [UInt8] { (0..<n).map { _ in UInt8(truncatingIfNeeded: next()) } }
    }

    static let validBodies: [String] = [
        APIServer.visitJSON("fz-1"),
        #"{"type":"nearby","kilometresAway":1.2,"arrivalWindow":{"start":1790000300,"end":1790000900}}"#,
        #"{"type":"failed","reason":"no parts"}"#,
        #"{"type":"reassigned","technician":{"id":"t-2","name":"Kim","avatarSymbol":"person","vanDescription":"Red"}}"#,
        #"{"pushToken":"abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789","environment":"sandbox","version":2,"deviceId":"d-1"}"#,
        #"{"liveActivitiesEnabled":true,"frequentPushesEnabled":false}"#,
        #"{"role":"customer","subject":"c-1"}"#,
        #"{"minutes":30,"reason":"Stuck in traffic"}"#,
    ]

    static let oddValues: [String] = [
        "null", "true", "0", "-1", "1e308", "-1e308", "1.5e-320", "123456789012345678901234567890", "\"\"", "\"x\"",
        "[]", "{}", "[[[[[[[[[[]]]]]]]]]]", "\"\\u0000\"", "\"\\ud800\"", "\"\\uffff\"",
        "\"\(String(repeating: "é", count: 3000))\"",
        "{\"start\":\"a\",\"end\":null}", "{\"start\":1790000900,\"end\":1790000300}", "NaN", "\"enRoute\"", "\"cancelled\"",
    ]

    /// A mutated body: a valid one with a field replaced, truncated, garbled or swapped for junk.
    static func body(_ r: inout Seeded) -> [UInt8] {
        var text = r.pick(validBodies)
        switch r.below(10) {
        case 0:  // truncated JSON
            return Array(text.utf8.prefix(r.below(text.utf8.count)))
        case 1:  // bad UTF-8 inside a string
            var bytes = Array(text.utf8)
            if let quote = bytes.lastIndex(of: UInt8(ascii: "\"")) {
                bytes.insert(contentsOf: [0xC3, 0x28, 0xFF, 0xED, 0xA0, 0x80], at: quote)
            }
            return bytes
        case 2:  // random bytes
            return r.bytes(r.below(300))
        case 3:  // deep nesting
            let depth = 1 + r.below(5000)
            return Array((String(repeating: "[", count: depth) + String(repeating: "]", count: depth)).utf8)
        case 4:  // a huge body (over 64 KiB)
            return Array(
                ("{\"type\":\"progress\",\"x\":\"" + String(repeating: "a", count: 65_000 + r.below(100_000)) + "\"}").utf8)
        case 5:  // duplicated keys, extra fields
            text = String(text.dropLast()) + ",\"type\":\"completed\",\"extra\":\(r.pick(oddValues))}"
            return Array(text.utf8)
        default:  // one value replaced by an odd one
            let keys = [
                "type", "kilometresAway", "arrivalWindow", "reason", "technician", "pushToken", "environment", "version",
                "deviceId", "liveActivitiesEnabled", "frequentPushesEnabled", "role", "subject", "visitId", "customerId",
                "attributes", "start", "end", "id", "name", "minutes",
            ]
            let key = r.pick(keys)
            guard let range = text.range(of: "\"\(key)\":") else { return Array(text.utf8) }
            var end = range.upperBound
            var depth = 0
            var inString = false
            while end < text.endIndex {
                let c = text[end]
                if c == "\"" { inString.toggle() }
                if !inString {
                    if c == "{" || c == "[" { depth += 1 }
                    if c == "}" || c == "]" {
                        if depth == 0 { break }
                        depth -= 1
                    }
                    if c == "," && depth == 0 { break }
                }
                end = text.index(after: end)
            }
            text.replaceSubrange(range.upperBound..<end, with: r.pick(oddValues))
            return Array(text.utf8)
        }
    }

    static let badSegments: [String] = [
        "v-1", "%FF%FE", "%00", "..", "%2e%2e", "a%2Fb", String(repeating: "x", count: 200), "%C3%28", "é", "%E2%80%AE",
        "' OR 1=1 --", "%27%20OR%201%3D1", "-1", "99999999999999999999999", "%20", "~", "a.b", "%",
    ]

    static func paths(_ r: inout Seeded, visit: String) -> (String, String) {
        let seg = { (r: inout Seeded) -> String in r.below(3) == 0 ? visit : r.pick(badSegments) }
        let routes: [(String, (inout Seeded) -> String)] = [
            ("POST", { _ in "/v1/visits" }),
            (
                "GET",
                { r in
                    "/v1/visits?status=\(r.pick(["active", "x", "%FF"]))&limit=\(r.pick(["1", "0", "-5", "abc", "999999999999"]))&cursor=\(r.pick(["", "%FF", "MTox", "abc"]))"
                }
            ),
            ("GET", { r in "/v1/visits/\(seg(&r))" }),
            ("GET", { r in "/v1/visits/\(seg(&r))/events" }),
            ("POST", { r in "/v1/visits/\(seg(&r))/events" }),
            ("PUT", { r in "/v1/visits/\(seg(&r))/live-activities/\(r.pick(badSegments))" }),
            ("DELETE", { r in "/v1/visits/\(seg(&r))/live-activities/\(r.pick(badSegments))" }),
            ("PUT", { r in "/v1/customers/\(r.pick(["c-1", "c-2"] + badSegments))/devices/\(r.pick(badSegments))/preferences" }),
            ("PUT", { r in "/v1/customers/\(r.pick(["c-1"] + badSegments))/push-to-start-tokens/\(r.pick(badSegments))" }),
            ("DELETE", { r in "/v1/customers/\(r.pick(["c-1"] + badSegments))/push-to-start-tokens/\(r.pick(badSegments))" }),
            ("PUT", { r in "/v1/customers/\(r.pick(["c-1"] + badSegments))/devices/\(r.pick(badSegments))/notification-token" }),
            (
                "DELETE",
                { r in "/v1/customers/\(r.pick(["c-1"] + badSegments))/devices/\(r.pick(badSegments))/notification-token" }
            ),
            ("POST", { _ in "/v1/keys" }),
            ("DELETE", { r in "/v1/keys/\(r.pick(badSegments))" }),
            (
                "GET",
                { r in "/v1/ops/outbox?state=\(r.pick(["pending", "dead", "%00", "x"]))&limit=\(r.pick(["1", "0", "1e3", "x"]))" }
            ),
            ("POST", { r in "/v1/ops/outbox/\(r.pick(badSegments))/retry" }),
            ("POST", { r in "/v1/ops/projections/\(r.pick(["visits", "technicians"] + badSegments))/rebuild" }),
            (
                "GET",
                { r in "/v1/technicians?date=\(r.pick(["2026-12-06", "2026-02-30", "%FF", "%00", "9999-99-99", "", "x"]))" }
            ),
            ("PATCH", { r in "/v1/visits/\(seg(&r))" }),
            ("POST", { r in "/v1/technicians/\(r.pick(["t-1"] + badSegments))/delay" }),
        ]
        let (method, make) = r.pick(routes)
        return (method, make(&r))
    }

    @Test func seededFuzzOverEveryRoute() async throws {
        try await withAPIServer { api in
            let visit = uniqueID("fz")
            try await api.schedule(visit, customer: "c-1", technician: "t-1")
            let keys = [
                api.dispatcher, api.ops, try await api.key(.customer, "c-1"), try await api.key(.technician, "t-1"), "garbage",
                "",
            ]
            var r = Seeded(state: 20_261_129)
            var statuses: [Int: Int] = [:]
            var unanswered = 0
            var truncated: [[UInt8]] = []
            for i in 0..<600 {
                let (method, path) = FuzzTests.paths(&r, visit: visit)
                var headers: [(String, String)] = []
                let key = r.pick(keys)
                if !key.isEmpty { headers.append(("Authorization", "Bearer \(key)")) }
                if r.below(4) == 0 {
                    headers.append(
                        ("Idempotency-Key", r.pick(["k1", "k-\(i)", "\u{7f}bad", String(repeating: "k", count: 300)])))
                }
                if r.below(4) == 0 {
                    headers.append(("If-Match", r.pick(["\"1\"", "W/\"2\"", "abc", "\"-1\"", "99999999999999999999", "*"])))
                }
                let body =
                    method == "GET" || method == "DELETE" ? (r.below(5) == 0 ? FuzzTests.body(&r) : nil) : FuzzTests.body(&r)
                let answer: RawResponse
                if let body, r.below(12) == 0 {
                    // Truncated upload: Content-Length promises more than is sent, then the client half-closes.
                    var head =
                        "\(method) \(path) HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: \(body.count + 10)\r\n"
                    for (name, value) in headers { head += "\(name): \(value)\r\n" }
                    // The server waits out its idle timeout on these, so they run together after the loop.
                    truncated.append(Array((head + "\r\n").utf8) + body)
                    continue
                } else {
                    answer = try await api.client.send(method, path, headers: headers, body: body)
                }
                statuses[answer.status, default: 0] += 1
                #expect(
                    answer.status < 500 || answer.status == 503, "\(method) \(path) → \(answer.status) \(answer.text.prefix(200))"
                )
                if answer.status >= 400 {
                    #expect(answer.errorCode != nil, "\(method) \(path) → \(answer.status) without an error body")
                }
            }
            let client = api.client
            let late = await withTaskGroup(of: Exchange.self) { group in
                for request in truncated {
                    group.addTask { await Exchange(client, request, shutdownWrite: true) }
                }
                return await group.reduce(into: [Exchange]()) { $0.append($1) }
            }
            var failed: [String] = []
            for exchange in late {
                switch exchange {
                case .answered(let answer):
                    statuses[answer.status, default: 0] += 1
                    #expect(
                        answer.status < 500 || answer.status == 503,
                        "truncated upload → \(answer.status) \(answer.text.prefix(200))")
                case .closedUnanswered: unanswered += 1  // the upload never ended: closing without an answer is fine
                case .failed(let error): failed.append(error)
                }
            }
            #expect(truncated.count > 10, "the seeded run sends truncated uploads")
            #expect(
                failed.isEmpty, "\(failed.count) of \(truncated.count) truncated uploads failed otherwise: \(failed.prefix(3))")
            #expect(try await api.call("GET", "/healthz", key: nil).status == 200)
            #expect(try await api.call("GET", "/v1/visits/\(visit)", key: api.dispatcher).status == 200)
            print("fuzz statuses: \(statuses.sorted { $0.key < $1.key }), unanswered truncated uploads: \(unanswered)")
        }
    }

    @Test func rawPathAndHeaderBytes() async throws {
        try await withAPIServer { api in
            let requests: [[UInt8]] = [
                Array("GET /v1/visits/".utf8) + [0xFF, 0xFE, 0xC3, 0x28]
                    + Array(" HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".utf8),
                Array("GET /v1/visits HTTP/1.1\r\nHost: x\r\nConnection: close\r\nAuthorization: Bearer ".utf8) + [
                    0xFF, 0x00, 0x80,
                ]
                    + Array("\r\n\r\n".utf8),
                Array(
                    "POST /v1/visits HTTP/1.1\r\nHost: x\r\nConnection: close\r\nAuthorization: Bearer \(api.dispatcher)\r\nIdempotency-Key: "
                        .utf8)
                    + [0xE2, 0x82] + Array("\r\nContent-Length: 2\r\n\r\n{}".utf8),
                Array(
                    "POST /v1/visits HTTP/1.1\r\nHost: x\r\nConnection: close\r\nTransfer-Encoding: chunked\r\nAuthorization: Bearer \(api.dispatcher)\r\n\r\n5\r\n{\"vis\r\n0\r\n\r\n"
                        .utf8),
                Array(
                    "GET /v1/visits?limit=%FF&cursor=%00%00 HTTP/1.1\r\nHost: x\r\nConnection: close\r\nAuthorization: Bearer \(api.ops)\r\n\r\n"
                        .utf8),
            ]
            var failed: [String] = []
            for request in requests {
                switch await Exchange(api.client, request) {
                case .answered(let answer):
                    #expect(answer.status < 500 || answer.status == 503, "\(answer.status) \(answer.text)")
                case .closedUnanswered:
                    failed.append("closed without an answer: \(String(decoding: request.prefix(60), as: UTF8.self))")
                case .failed(let error): failed.append(error)
                }
            }
            #expect(failed.isEmpty, "\(failed.count) of \(requests.count) exchanges failed: \(failed)")
            let health = try await api.call("GET", "/healthz", key: nil)
            #expect(health.status == 200)
        }
    }
}

/// How one raw exchange ended: an answer, the server closing without one, or anything else (refused,
/// reset, half an answer), which a fuzz run counts as a failure.
enum Exchange {
    case answered(RawResponse)
    case closedUnanswered
    case failed(String)

    init(_ client: RawHTTPClient, _ request: [UInt8], shutdownWrite: Bool = false) async {
        do {
            self = .answered(try await client.exchange(request, shutdownWrite: shutdownWrite))
        } catch let error as RawHTTPError where error.description == "no HTTP answer (0 bytes)" {
            self = .closedUnanswered
        } catch {
            self = .failed("\(error)")
        }
    }
}

/// Strings PostgreSQL cannot store (`\u0000` in jsonb and text) and lone surrogates, in every string field.
@Suite(.timeLimit(.minutes(5))) struct UnstorableStringTests {
    static let nasty = [#"a\u0000b"#, #"\ud800"#, #"\udfff\ud800"#, #"\u001f"#, #"\u2028"#]

    @Test func everyStringFieldRefusesOrStoresThem() async throws {
        try await withAPIServer { api in
            let id = uniqueID("nul")
            try await api.schedule(id, customer: "c-1", technician: "t-1")
            let customer = try await api.key(.customer, "c-1")
            var answers: [(String, RawResponse)] = []
            for (n, text) in UnstorableStringTests.nasty.enumerated() {
                let fresh = "\(id)-\(n)"
                let now = Int(Date().timeIntervalSince1970)
                let schedules = [
                    "{\"visitId\":\"\(fresh)a\",\"customerId\":\"\(text)\",\"attributes\":{\"customerFirstName\":\"A\",\"serviceAddress\":\"B\",\"jobSummary\":\"C\"},\"technician\":{\"id\":\"t\",\"name\":\"S\",\"avatarSymbol\":\"p\",\"vanDescription\":\"V\"},\"arrivalWindow\":{\"start\":\(now),\"end\":\(now + 60)}}",
                    "{\"visitId\":\"\(fresh)b\",\"customerId\":\"c\",\"attributes\":{\"customerFirstName\":\"\(text)\",\"serviceAddress\":\"\(text)\",\"jobSummary\":\"\(text)\"},\"technician\":{\"id\":\"t\",\"name\":\"S\",\"avatarSymbol\":\"p\",\"vanDescription\":\"V\"},\"arrivalWindow\":{\"start\":\(now),\"end\":\(now + 60)}}",
                    "{\"visitId\":\"\(fresh)c\",\"customerId\":\"c\",\"attributes\":{\"customerFirstName\":\"A\",\"serviceAddress\":\"B\",\"jobSummary\":\"C\"},\"technician\":{\"id\":\"\(text)\",\"name\":\"\(text)\",\"avatarSymbol\":\"\(text)\",\"vanDescription\":\"\(text)\"},\"arrivalWindow\":{\"start\":\(now),\"end\":\(now + 60)}}",
                ]
                for body in schedules {
                    answers.append(
                        (
                            "schedule",
                            try await api.call(
                                "POST", "/v1/visits", key: api.dispatcher, json: body,
                                headers: [("Idempotency-Key", "i-\(UUID())")])
                        ))
                }
                answers.append(
                    ("failed", try await api.post(id, "{\"type\":\"progress\",\"kilometresAway\":1,\"x\":\"\(text)\"}")))
                answers.append(
                    (
                        "reassigned",
                        try await api.post(
                            id,
                            "{\"type\":\"reassigned\",\"technician\":{\"id\":\"t-1\",\"name\":\"\(text)\",\"avatarSymbol\":\"p\",\"vanDescription\":\"V\"}}"
                        )
                    ))
                answers.append(
                    (
                        "key",
                        try await api.call(
                            "POST", "/v1/keys", key: api.dispatcher, json: "{\"role\":\"customer\",\"subject\":\"\(text)\"}")
                    ))
                answers.append(
                    (
                        "token",
                        try await api.call(
                            "PUT", "/v1/visits/\(id)/live-activities/a-\(n)", key: customer,
                            json: "{\"pushToken\":\"\(pushToken("n"))\",\"environment\":\"sandbox\",\"deviceId\":\"\(text)\"}")
                    ))
            }
            // The reason last: it ends the visit when it is accepted.
            for text in UnstorableStringTests.nasty {
                answers.append(("failed", try await api.post(id, "{\"type\":\"failed\",\"reason\":\"\(text)\"}")))
            }
            for (what, answer) in answers {
                #expect(answer.status < 500, "\(what) → \(answer.status) \(answer.text)")
            }
            #expect(try await api.call("GET", "/v1/visits/\(id)/events", key: api.dispatcher).status == 200)
        }
    }
}
