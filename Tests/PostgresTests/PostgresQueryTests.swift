import TestSupport
import Testing

@testable import Postgres

/// What a query sends: bind parameters (never SQL text) and, for spliced fragments, placeholders
/// renumbered after the outer query's.
@Suite(.timeLimit(.minutes(1))) struct PostgresQueryTests {
    @Test func interpolatedValuesAreBindsAndAStringLiteralStaysOne() {
        let name = "x'; DROP TABLE t; --"
        let q: PostgresQuery = "SELECT \(name), \("literal"), \(Int64(7)), \(nil as String?)"
        #expect(q.sql == "SELECT $1, $2, $3, $4")
        #expect(q.binds == [.text(name), "literal", "7", nil])
    }

    @Test func aFragmentsPlaceholdersFollowTheOuterQuerys() {
        let owner: PostgresQuery = "customer_id = \("c1") AND device_id = \("d1")"
        let q: PostgresQuery = "SELECT \(1) FROM t WHERE \(owner) AND n > \(2) AND (\(owner))"
        #expect(
            q.sql
                == "SELECT $1 FROM t WHERE customer_id = $2 AND device_id = $3 AND n > $4 AND (customer_id = $5 AND device_id = $6)"
        )
        #expect(q.binds == ["1", "c1", "d1", "2", "c1", "d1"])
        // Nested: the inner fragment is renumbered once into the middle one, then again into the outer.
        let middle: PostgresQuery = "x = \("m") OR \(owner)"
        let outer: PostgresQuery = "\("first") \(middle)"
        #expect(outer.sql == "$1 x = $2 OR customer_id = $3 AND device_id = $4")
        #expect(outer.binds == ["first", "m", "c1", "d1"])
        // A fragment without binds goes in as it is.
        let table: PostgresQuery = "visit_id, activity_id"
        let insert: PostgresQuery = "INSERT INTO t (\(table)) VALUES (\("v"), \("a"))"
        #expect(insert.sql == "INSERT INTO t (visit_id, activity_id) VALUES ($1, $2)")
    }

    @Test func onlyRealPlaceholdersAreRenumbered() {
        let cases: [(String, String)] = [
            ("'costs $1' = $1", "'costs $1' = $3"),
            ("'it''s $1' || $1", "'it''s $1' || $3"),
            (#"E'\' $1' || $1"#, #"E'\' $1' || $3"#),
            (#"'\' || $1"#, #"'\' || $3"#),  // a backslash is no escape in a standard string
            (#""col$1" = $1"#, #""col$1" = $3"#),
            ("a$1 = $1", "a$1 = $3"),
            ("$$ body $1 $$ || $1", "$$ body $1 $$ || $3"),
            ("$fn$ $1 $$ $1 $fn$ || $1", "$fn$ $1 $$ $1 $fn$ || $3"),
            ("$1 -- about $1\n+ $2", "$3 -- about $1\n+ $4"),
            ("/* $1 /* nested $1 */ still $1 */ $1", "/* $1 /* nested $1 */ still $1 */ $3"),
            ("$10 + $1", "$12 + $3"),
            ("price$", "price$"),
            ("$", "$"),
        ]
        for (fragment, expected) in cases {
            #expect(PostgresQuery.renumbered(fragment, by: 2) == expected, "\(fragment)")
        }
    }

    @Test func arrayLiteralsQuoteEveryElement() {
        #expect([String]().postgresText == "{}")
        #expect(["a", "b"].postgresText == #"{"a","b"}"#)
        #expect(["", "NULL", "a,b", "{x}", " sp "].postgresText == #"{"","NULL","a,b","{x}"," sp "}"#)
        #expect([#"say "hi""#, #"back\slash"#].postgresText == #"{"say \"hi\"","back\\slash"}"#)
        #expect(["ü €", "🙂"].postgresText == #"{"ü €","🙂"}"#)
        // Escapes first, last, adjacent, and alone (runs between them are copied whole).
        let edges = ["\"first", "last\\", "\\\"", "\"", "a\\\"b"]
        #expect(edges.postgresText == #"{"\"first","last\\","\\\"","\"","a\\\"b"}"#)
        #expect([Int64(1), -2].postgresText == #"{"1","-2"}"#)
        #expect(PostgresNullableArray<String>(["a", nil, "NULL"]).postgresText == #"{"a",NULL,"NULL"}"#)
        #expect(PostgresNullableArray<Double>([1.5, nil]).postgresText == #"{"1.5",NULL}"#)
    }

    @Test func scalarsEncodeAsPostgreSQLReadsThem() {
        #expect(true.postgresText == "t")
        #expect(false.postgresText == "f")
        #expect(Double.nan.postgresText == "NaN")
        #expect(Double.infinity.postgresText == "Infinity")
        #expect((-Double.infinity).postgresText == "-Infinity")
        #expect(Int32(-5).postgresText == "-5")
    }

    /// The server's reading is the oracle: every element comes back as it was bound, NULL as NULL.
    @Test func arraysAndFragmentsRoundTripThroughPostgreSQL() async throws {
        try await withTestDatabase(poolSize: 1) { _, pool in
            let texts: [String?] = [
                "plain", "", "NULL", nil, #"quote " and \ backslash"#, "a,b", "{braces}", "line\nbreak", "ü 🙂", " ",
            ]
            let back = try await pool.withConnection { c in
                try c.query("SELECT x FROM unnest(\(PostgresNullableArray(texts))::text[]) WITH ORDINALITY AS u(x, i) ORDER BY i")
                    .rows.map { $0["x"] }
            }
            #expect(back == texts)
            let numbers: [Int64] = [0, -1, Int64.max, Int64.min]
            let (count, third) = try await pool.withConnection { c -> (Int, Int64) in
                let row = try c.query("SELECT array_length(\(numbers)::bigint[], 1) AS n, (\(numbers)::bigint[])[3] AS third")
                    .first!
                return (try row.int("n"), try row.int64("third"))
            }
            #expect(count == 4)
            #expect(third == Int64.max)

            let owner: PostgresQuery = "v.customer = \("c2") AND v.device = \("d2")"
            let found = try await pool.withConnection { c in
                try c.query(
                    """
                    SELECT v.n FROM (VALUES (\(1), 'c1', 'd1'), (\(2), 'c2', 'd2'), (\(3), 'c2', 'd2')) AS v(n, customer, device)
                    WHERE \(owner) AND v.n::int > \(2) AND '$1 stays text' <> ''
                    """
                ).rows.map { try $0.int("n") }
            }
            #expect(found == [3])
        }
    }
}
