import Foundation
import TestSupport
import Testing

@testable import Postgres

/// COPY in and out (the replay's bulk path): text with every character COPY escapes comes back byte for
/// byte, a COPY FROM whose producer fails leaves nothing behind, a COPY TO whose consumer fails stops and
/// leaves the connection usable.
@Suite(.timeLimit(.minutes(1))) struct CopyTests {
    static let awkward = [
        "plain", "tab\there", "new\nline", "carriage\rreturn", #"back\slash"#, #"\N"#, "{\"json\": \"a \\\"quote\\\"\"}",
        "unicode: Zoë 🚐 \u{7}bell", "", "\u{8}\u{b}\u{c}",
    ]

    @Test func textWithEveryEscapeRoundTrips() async throws {
        try await withTestDatabase(poolSize: 1) { _, pool in
            let back = try await pool.withConnection { c -> [String?] in
                try c.execute(script: "CREATE TABLE t (n int PRIMARY KEY, s text, j jsonb)")
                try c.copyIn("COPY t (n, s, j) FROM STDIN") { send in
                    for (n, text) in CopyTests.awkward.enumerated() {
                        var line: [UInt8] = Array("\(n)\t".utf8)
                        PostgresCopyText.append(text, to: &line)
                        line.append(0x09)
                        PostgresCopyText.append(JSONText.quoted(text), to: &line)
                        line.append(0x0A)
                        try line.withUnsafeBytes { try send($0) }
                    }
                }
                // What SQL sees equals what was sent, and the jsonb parsed the escaped JSON.
                let rows = try c.query("SELECT s, j #>> '{}' AS j FROM t ORDER BY n")
                #expect(rows.rows.map { $0["j"] } == CopyTests.awkward.map { Optional($0) })
                var copied: [String?] = []
                let count = try c.copyOut("COPY (SELECT s, NULL::text FROM t ORDER BY n) TO STDOUT") { row in
                    let fields = PostgresCopyText.fields(row)
                    #expect(fields.count == 2)
                    #expect(PostgresCopyText.unescaped(fields[1]) == nil, "\\N is NULL")
                    copied.append(PostgresCopyText.unescaped(fields[0]).map { String(decoding: $0, as: UTF8.self) })
                }
                #expect(count == CopyTests.awkward.count)
                return copied
            }
            #expect(back == CopyTests.awkward.map { Optional($0) })
        }
    }

    struct ProducerFailed: Error {}

    func count(_ c: PostgresConnection) throws -> Int? {
        try c.query("SELECT count(*) AS n FROM t").first.map { try $0.int("n") }
    }

    @Test func aFailedCopyInLeavesNothingAndTheConnectionServes() async throws {
        try await withTestDatabase(poolSize: 1) { _, pool in
            try await pool.withConnection { c in
                try c.execute(script: "CREATE TABLE t (n int PRIMARY KEY)")
                #expect(throws: ProducerFailed.self) {
                    try c.copyIn("COPY t (n) FROM STDIN") { send in
                        try Array("1\n2\n".utf8).withUnsafeBytes { try send($0) }
                        throw ProducerFailed()
                    }
                }
                #expect(try count(c) == 0)
                // Bad data fails the COPY with PostgreSQL's error, and nothing of it stands either.
                #expect(throws: PostgresError.self) {
                    try c.copyIn("COPY t (n) FROM STDIN") { send in try Array("3\nfour\n".utf8).withUnsafeBytes { try send($0) } }
                }
                #expect(try count(c) == 0)
                try c.copyIn("COPY t (n) FROM STDIN") { send in try Array("5\n6\n".utf8).withUnsafeBytes { try send($0) } }
                #expect(try count(c) == 2)
            }
        }
    }

    struct ConsumerFailed: Error {}

    @Test func aFailedCopyOutStopsAndTheConnectionServes() async throws {
        try await withTestDatabase(poolSize: 1) { _, pool in
            try await pool.withConnection { c in
                var seen = 0
                #expect(throws: ConsumerFailed.self) {
                    try c.copyOut("COPY (SELECT n FROM generate_series(1, 2000000) n) TO STDOUT") { _ in
                        seen += 1
                        if seen == 10 { throw ConsumerFailed() }
                    }
                }
                #expect(seen == 10, "rows after the failure are not handed on")
                #expect(c.isHealthy)
                let answer = try c.query("SELECT 41 + 1 AS n").first.map { try $0.int("n") }
                #expect(answer == 42)
            }
        }
    }
}

/// A JSON string literal for a text (the test's own, independent of the JSON target).
enum JSONText {
    static func quoted(_ text: String) -> String {
        var out = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case _ where scalar.value < 0x20: out += String(format: "\\u%04x", scalar.value)
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out + "\""
    }
}
