import TestSupport
import Testing

@testable import Postgres

/// Arrays sent in PostgreSQL's binary format (`PostgresBinaryArray`): what arrives is what was sent — every
/// element type, NULLs, empty arrays, text that a literal would have to quote — alone, in a pipeline, with and
/// without prepared statements, cast by the statement; and a statement sent once with text binds and once with
/// binary ones is two prepared statements, each with its own types.
@Suite(.serialized, .timeLimit(.minutes(1))) struct BinaryArrayTests {
    static let awkward = [
        "plain", "", "with \"quotes\" and \\backslashes\\", "{braces},commas", "NULL", "accents: é, ü — and 🚐", " spaced ",
        String(repeating: "x", count: 70_000),
    ]

    /// Lends a one-connection pool on a fresh database, with or without prepared statements.
    func withScratchPool<Result>(prepared: Bool, _ body: (PostgresPool) async throws -> Result) async throws -> Result {
        let url = try await TestDatabase.createMigrated()
        return try await PostgresPool.withPool(
            PostgresConfiguration(url: url, size: 1, usePreparedStatements: prepared), body)
    }

    @Test(arguments: [true, false]) func everyElementTypeArrivesAsSent(prepared: Bool) async throws {
        try await withScratchPool(prepared: prepared) { pool in
            let texts = Self.awkward
            let optionalTexts: [String?] = ["a", nil, "c \"q\"", nil]
            let ints: [Int64] = [0, 1, -1, Int64.max, Int64.min]
            let counts: [Int] = [3, -2]
            let doubles: [Double?] = [0.5, nil, -1e300, 1_790_000_000.25]
            let flags = [true, false, true]
            let query: PostgresQuery = """
                SELECT (SELECT array_agg(t ORDER BY n) FROM unnest(\(PostgresBinaryArray(texts))::text[]) WITH ORDINALITY AS x(t, n))
                           = \(texts)::text[] AS texts_equal,
                       cardinality(\(PostgresBinaryArray(texts))::text[]) AS text_count,
                       \(PostgresBinaryArray(optionalTexts))::text[] IS NOT DISTINCT FROM \(PostgresNullableArray(optionalTexts))::text[] AS optional_equal,
                       \(PostgresBinaryArray(ints))::bigint[] = \(ints)::bigint[] AS ints_equal,
                       array_to_string(\(PostgresBinaryArray(counts))::integer[], ',') AS counts,
                       pg_typeof(\(PostgresBinaryArray(counts))::integer[])::text AS counts_type,
                       \(PostgresBinaryArray(doubles))::float8[] IS NOT DISTINCT FROM \(PostgresNullableArray(doubles))::float8[] AS doubles_equal,
                       array_to_string(\(PostgresBinaryArray(flags))::boolean[], ',') AS flags,
                       cardinality(\(PostgresBinaryArray([String]()))::text[]) AS empty_count,
                       \(PostgresBinaryArray([Int64?]([nil, nil])))::bigint[] AS all_null
                """
            for _ in 0..<2 {
                let row = try await pool.withConnection { c in try c.query(query).first! }
                #expect(row["texts_equal"] == "t")
                #expect(row["text_count"] == "\(texts.count)")
                #expect(row["optional_equal"] == "t")
                #expect(row["ints_equal"] == "t")
                #expect(row["counts"] == "3,-2")
                #expect(row["counts_type"] == "integer[]")
                #expect(row["doubles_equal"] == "t")
                #expect(row["flags"] == "t,f,t")
                #expect(row["empty_count"] == "0")
                #expect(row["all_null"] == "{NULL,NULL}")
            }
            // In a pipeline, between text-bound statements.
            let values = try await pool.withConnection { c in
                try c.pipeline([
                    "SELECT \(1) AS n",
                    "SELECT array_length(\(PostgresBinaryArray(ints))::bigint[], 1) AS n",
                    "SELECT sum(x) AS n FROM unnest(\(PostgresBinaryArray(counts))::integer[]) AS x",
                ]).map { try $0.first!.int("n") }
            }
            #expect(values == [1, 5, 1])
        }
    }

    @Test func theSameStatementWithTextAndWithBinaryBindsIsPreparedForEach() async throws {
        try await withScratchPool(prepared: true) { pool in
            func statement(_ ids: some PostgresEncodable) -> PostgresQuery {
                "SELECT sum(x)::bigint AS n FROM unnest(\(ids)::bigint[]) AS x"
            }
            let ids: [Int64] = [1, 2, 3]
            let (text, binary) = (statement(ids), statement(PostgresBinaryArray(ids)))
            #expect(text.sql == binary.sql)
            #expect(StatementText(text) != StatementText(binary))
            let sums = try await pool.withConnection { c in
                [try c.query(text).first!.int("n"), try c.query(binary).first!.int("n"), try c.query(text).first!.int("n")]
            }
            #expect(sums == [6, 6, 6])
        }
    }

    @Test func itsTextIsTheLiteralItStandsFor() {
        #expect(PostgresBinaryArray(["a\"b", "c"]).postgresText == #"{"a\"b","c"}"#)
        #expect(PostgresBinaryArray([Int64?]([1, nil])).postgresText == #"{"1",NULL}"#)
        guard case .binary(let type, let bytes) = PostgresBinaryArray(["ab"]).postgresBind else {
            Issue.record("not binary")
            return
        }
        #expect(type == 1009)
        // One dimension, no NULL, text elements, 1 element from 1; "ab" as length 2 and its bytes.
        #expect(bytes == [0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 25, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 2, 97, 98])
    }
}
