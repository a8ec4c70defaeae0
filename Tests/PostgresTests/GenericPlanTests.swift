import TestSupport
import Testing

@testable import Postgres

/// `PostgresQuery.plannedOnce()` and `plannedForItsValues()`: the statement runs under its `plan_cache_mode`, and only it
/// does — the statements before and after it, in the same pipeline or transaction, run as they would without.
@Suite(.timeLimit(.minutes(1))) struct GenericPlanTests {
    // (With a parameter: a statement without one runs under whatever mode is in force, see below.)
    static let mode: PostgresQuery = "SELECT current_setting(\("plan_cache_mode")) AS mode"

    @Test(arguments: [true, false]) func onlyTheFlaggedStatementRunsUnderAGenericPlan(prepared: Bool) async throws {
        let url = try await TestDatabase.createMigrated()
        try await PostgresPool.withPool(PostgresConfiguration(url: url, size: 1, usePreparedStatements: prepared)) { pool in
            let modes = try await pool.withConnection { c -> [String] in
                var modes: [String] = []
                // In a pipeline (one implicit transaction): before, flagged twice in a row, between, flagged, after.
                let generic = GenericPlanTests.mode.plannedOnce()
                let statements = [GenericPlanTests.mode, generic, generic, GenericPlanTests.mode, generic, GenericPlanTests.mode]
                modes += try c.pipeline(statements).map { try $0.rows[0].string("mode") }
                // Alone, then in an explicit transaction, and the connection after it.
                modes.append(try c.query(generic).rows[0].string("mode"))
                modes += try c.transaction { t in
                    [try t.query(generic).rows[0].string("mode"), try t.query(GenericPlanTests.mode).rows[0].string("mode")]
                }
                modes.append(try c.query(GenericPlanTests.mode).rows[0].string("mode"))
                return modes
            }
            let (auto, generic) = ("auto", "force_generic_plan")
            #expect(modes == [auto, generic, generic, auto, generic, auto, generic, generic, auto, auto])
        }
    }

    @Test func aStatementPlannedForItsValuesRunsUnderCustomPlansAndAGenericOneNextToItToo() async throws {
        try await withTestDatabase(poolSize: 1) { _, pool in
            let modes = try await pool.withConnection { c in
                try c.pipeline([
                    GenericPlanTests.mode.plannedForItsValues(), GenericPlanTests.mode.plannedOnce(), GenericPlanTests.mode,
                ]).map { try $0.rows[0].string("mode") }
            }
            #expect(modes == ["force_custom_plan", "force_generic_plan", "auto"])
        }
    }

    /// With prepared statements the session keeps the mode last set: a connection that runs the same flagged
    /// statements again sends no setting, and one is sent only where the mode must change.
    @Test func aSessionSetsItsModeOnlyWhereItChanges() {
        let plain: PostgresQuery = "SELECT \(1)"
        let flagged = plain.plannedOnce()
        let again = PostgresQuery.withSessionPlanModes([flagged, flagged], from: .once)
        #expect(again.queries.count == 2 && again.positions == [0, 1] && again.after == .once)
        let mixed = PostgresQuery.withSessionPlanModes([flagged, plain, plain], from: nil)
        #expect(mixed.queries.count == 5 && mixed.positions == [1, 3, 4] && mixed.after == .chosenByServer)
        // Session-wide (`is_local` false), the mode's name as the value, and sequential scans off for `once` alone
        // (mode, seqscan, bitmapscan, jit).
        #expect(mixed.queries[0].binds == ["force_generic_plan", "f", "off", "f", "on", "f", "off", "f"])
        #expect(mixed.queries[2].binds == ["auto", "f", "on", "f", "on", "f", "on", "f"])
        // Along indexes: bitmap scans off too, and a setting between it and `once`, which differ in that alone.
        let alongIndexes = plain.plannedOnceAlongIndexes()
        let both = PostgresQuery.withSessionPlanModes([alongIndexes, flagged, flagged], from: .once)
        #expect(both.queries.count == 5 && both.positions == [1, 3, 4] && both.after == .once)
        #expect(both.queries[0].binds == ["force_generic_plan", "f", "off", "f", "off", "f", "off", "f"])
    }

    /// A statement planned once along indexes is planned with bitmap scans off, and only it: the statements
    /// after it run with the server's setting again.
    @Test func alongIndexesTurnsBitmapScansOffForItsStatementAlone() async throws {
        let scans: PostgresQuery = """
            SELECT current_setting(\("enable_bitmapscan")) || '/' || current_setting('enable_seqscan') AS scans
            """
        try await withTestDatabase(poolSize: 1) { _, pool in
            let seen = try await pool.withConnection { c in
                try c.pipeline([scans.plannedOnceAlongIndexes(), scans.plannedOnce(), scans, scans.plannedOnceAlongIndexes()])
                    .map { try $0.rows[0].string("scans") } + [try c.query(scans).rows[0].string("scans")]
            }
            #expect(seen == ["off/off", "on/off", "on/on", "off/off", "on/on"])
        }
    }

    /// A setting made in a transaction that fails or rolls back is undone by PostgreSQL: the connection must not
    /// go on believing it.
    @Test func aSettingUndoneByARollbackIsNotTrusted() async throws {
        try await withTestDatabase(poolSize: 1) { _, pool in
            let generic = GenericPlanTests.mode.plannedOnce()
            let modes = try await pool.withConnection { c -> [String] in
                var modes: [String] = []
                // Fails after its setting: the implicit transaction and the setting go.
                #expect(throws: PostgresError.self) { try c.pipeline([generic, "SELECT 1 / 0"]) }
                modes.append(try c.query(generic).rows[0].string("mode"))
                // Set to auto in a transaction that rolls back: the generic mode from before it is back, and a plain
                // statement after it must set auto again.
                struct Undo: Error {}
                #expect(throws: Undo.self) {
                    try c.transaction { t in
                        _ = try t.query(GenericPlanTests.mode)
                        throw Undo()
                    }
                }
                modes.append(try c.query(GenericPlanTests.mode).rows[0].string("mode"))
                modes.append(try c.query(generic).rows[0].string("mode"))
                return modes
            }
            #expect(modes == ["force_generic_plan", "auto", "force_generic_plan"])
        }
    }

    @Test func theStatementsAroundItKeepTheirOwnResults() {
        let plain: PostgresQuery = "SELECT \(1)"
        let flagged = plain.plannedOnce()
        let (sent, positions) = PostgresQuery.withPlanModes([plain, flagged, flagged, plain])
        #expect(sent.map(\.planning) == [.chosenByServer, .chosenByServer, .once, .once, .chosenByServer, .chosenByServer])
        #expect(positions == [0, 2, 3, 5])
        #expect(sent[1].binds.contains("force_generic_plan") && sent[4].binds.contains("auto"))
    }

    /// A statement without parameters is planned once whatever the mode (PostgreSQL has no values to plan it for),
    /// so it needs no `plan_cache_mode`; but it is planned with sequential scans off only when flagged `once`
    /// itself: after a `once` statement an unflagged one sets the server's choice back, and between two
    /// statements that agree it sends nothing.
    @Test func aStatementWithoutParametersIsNotPlannedWithoutSequentialScansUnlessFlagged() async throws {
        let bare: PostgresQuery = """
            SELECT current_setting('plan_cache_mode') AS mode, current_setting('enable_seqscan') || '/' || current_setting('jit') AS scans
            """
        let flagged: PostgresQuery = """
            SELECT current_setting(\("plan_cache_mode")) AS mode, current_setting('enable_seqscan') || '/' || current_setting('jit') AS scans
            """
        let once = flagged.plannedOnce()
        let session = PostgresQuery.withSessionPlanModes([once, bare.plannedOnce(), once], from: .once)
        #expect(session.queries.count == 3 && session.positions == [0, 1, 2] && session.after == .once)
        let back = PostgresQuery.withSessionPlanModes([once, bare, bare, once], from: .once)
        #expect(back.queries.count == 6 && back.positions == [0, 2, 3, 5] && back.after == .once)
        let local = PostgresQuery.withPlanModes([bare, flagged])
        #expect(local.queries.count == 2 && local.positions == [0, 1])
        try await withTestDatabase(poolSize: 1) { _, pool in
            let (settings, jit) = try await pool.withConnection { c in
                (
                    try c.pipeline([once, bare, once, bare.plannedOnce()]).map {
                        try $0.rows[0].string("mode") + "/" + $0.rows[0].string("scans")
                    } + [try c.query(bare).rows[0].string("mode") + "/" + c.query(bare).rows[0].string("scans")],
                    try c.query("SELECT reset_val AS jit FROM pg_settings WHERE name = 'jit'").rows[0].string("jit")
                )
            }
            // (Sequential scans and JIT as the server has them, outside `once`.)
            let (generic, auto) = ("force_generic_plan/off/off", "auto/on/\(jit)")
            #expect(settings == [generic, auto, generic, generic, auto])
        }
    }

    /// A statement planned once on a table that was nearly empty then probes it by its index as the table
    /// fills: the plan is made with sequential scans off. (Made otherwise, it scanned the whole table at every
    /// execution until an ANALYZE replaced it: what an outbox filling from empty cost every enqueue.)
    @Test func aPlanMadeOnANearlyEmptyTableProbesItsIndexAsItFills() async throws {
        try await withTestDatabase(poolSize: 1) { _, pool in
            let plan = try await pool.withConnection { c -> String in
                try c.execute(
                    script: """
                        CREATE TABLE queue (id bigserial PRIMARY KEY, target text NOT NULL, state text NOT NULL);
                        CREATE INDEX queue_open_by_target ON queue (target) WHERE state IN ('pending', 'sending');
                        INSERT INTO queue (target, state) SELECT 't' || g, 'pending' FROM generate_series(1, 5) g;
                        ANALYZE queue;
                        """)
                let probe: PostgresQuery = """
                    SELECT EXISTS (SELECT 1 FROM queue WHERE target = \("t3") AND state IN ('pending', 'sending')) AS found
                    """
                #expect(try c.query(probe.plannedOnce()).rows[0].string("found") == "t")
                try c.execute(
                    script: "INSERT INTO queue (target, state) SELECT 't' || g, 'pending' FROM generate_series(6, 20000) g")
                // The statement as the connection prepared it, explained with the plan it made.
                let name = try c.query(
                    "SELECT name FROM pg_prepared_statements WHERE statement LIKE \("%FROM queue WHERE target%")"
                ).rows[0].string("name")
                // (Flagged too: under a generic plan's mode EXECUTE uses the plan made, not a custom one.)
                let explain = PostgresQuery(sql: "EXPLAIN EXECUTE \(name)('t3')").plannedOnce()
                return try c.query(explain).rows.map { try $0.string("QUERY PLAN") }.joined(separator: "\n")
            }
            #expect(plan.contains("queue_open_by_target") && !plan.contains("Seq Scan"), "\(plan)")
        }
    }
}
