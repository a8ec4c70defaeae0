import Foundation
import TestSupport
import Testing

/// `livevisits serve`'s own tuning variables: a bad value is a configuration error that names it (exit 2).
@Suite(.timeLimit(.minutes(10))) struct ServeConfigurationTests {
    @Test(arguments: ["0", "65", "two"])
    func aBadHTTPThreadCountIsAConfigurationError(_ value: String) async throws {
        let livevisits = try await BuiltProduct.livevisits()
        let database = try await TestDatabase.create(poolSize: 1)
        var environment = ProcessInfo.processInfo.environment
        environment["LIVEVISITS_DATABASE_URL"] = database.url
        environment["LIVEVISITS_HTTP_ADDR"] = "127.0.0.1:0"
        environment["LIVEVISITS_HTTP_THREADS"] = value
        environment["LIVEVISITS_MIGRATIONS_DIR"] = TestDatabase.migrationsDirectory.path
        environment["LIVEVISITS_PROJECTIONS_DIR"] = TestDatabase.projectionsDirectory.path
        let outcome = try await Subprocess.run(livevisits, ["serve", "--api-only"], environment: environment)
        await database.pool.close()
        #expect(outcome.status == 2)
        #expect(outcome.stderr.contains("LIVEVISITS_HTTP_THREADS must be a whole number from 1 to 64, not \(value)"))
    }
}
