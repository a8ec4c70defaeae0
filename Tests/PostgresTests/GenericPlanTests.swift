import TestSupport
import Testing

@testable import Postgres

/// `PostgresQuery.plannedOnce()` and `plannedForItsValues()`: the statement runs under its `plan_cache_mode`, and only it
/// does — the statements before and after it, in the same pipeline or transaction, run as they would without.
@Suite(.timeLimit(.minutes(1))) struct GenericPlanTests {
    static let mode: PostgresQuery = "SELECT current_setting('plan_cache_mode') AS mode"

    @Test(arguments: [true, false]) func onlyTheFlaggedStatementRunsUnderAGenericPlan(prepared: Bool) async throws {
        let (url, setup) = try await TestDatabase.create(poolSize: 1)
        await setup.close()
        let pool = PostgresPool(configuration: PostgresConfiguration(url: url, size: 1, usePreparedStatements: prepared))
        defer { Task { await pool.close() } }
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

    @Test func aStatementPlannedForItsValuesRunsUnderCustomPlansAndAGenericOneNextToItToo() async throws {
        let (_, pool) = try await TestDatabase.create(poolSize: 1)
        defer { Task { await pool.close() } }
        let modes = try await pool.withConnection { c in
            try c.pipeline([
                GenericPlanTests.mode.plannedForItsValues(), GenericPlanTests.mode.plannedOnce(), GenericPlanTests.mode,
            ]).map { try $0.rows[0].string("mode") }
        }
        #expect(modes == ["force_custom_plan", "force_generic_plan", "auto"])
    }

    @Test func theStatementsAroundItKeepTheirOwnResults() {
        let plain: PostgresQuery = "SELECT 1"
        let flagged = plain.plannedOnce()
        let (sent, positions) = PostgresQuery.withPlanModes([plain, flagged, flagged, plain])
        #expect(sent.map(\.planning) == [.chosenByServer, .chosenByServer, .once, .once, .chosenByServer, .chosenByServer])
        #expect(positions == [0, 2, 3, 5])
        #expect(sent[1].binds.contains("force_generic_plan") && sent[4].binds.contains("auto"))
    }
}
