import Foundation
import HTTPAPI
import HTTPServer
import Outbox
import PersonalData
import Postgres
import Runtime
import VisitCommands
import VisitProjections

/// Reads through the API's handler in-process (routing, authentication, the read, the opening of sealed
/// fields; no HTTP): `callers` tasks each repeating random requests of a list for `seconds`. The figures of
/// the benchmarks that set one read beside another in the same run (`technicians`, `tracking`).
struct HandlerReads {
    var perSecond: Double
    var p50: Double
    var p99: Double
    /// The body size of the last answer.
    var bytes: Int

    /// The API's handler on `pool`, with a `serve` process's limits but a rate far above what one key drives
    /// here (`APIBenchmark.InProcessReader.limits`).
    static func handler(pool: PostgresPool, readModel: VisitReadModel) -> HTTPHandler {
        let environment = APIEnvironment(
            pool: pool, readModel: readModel, outbox: Outbox(pool: pool),
            migrator: Migrator(directory: URL(fileURLWithPath: "Migrations")), metrics: Metrics(),
            personalData: PersonalDataKeys(current: nil), limits: APIBenchmark.InProcessReader.limits)
        return LiveVisitsAPI(environment: environment).handler()
    }

    /// Measures `requests` (each call picks one at random) until `seconds` have passed; any answer but 200
    /// stops the run with an error naming the path.
    static func measure(
        _ api: @escaping HTTPHandler, requests: [HTTPRequest], callers: Int, seconds: Double
    ) async throws -> HandlerReads {
        let started = Date()
        let (latencies, bytes) = try await withThrowingTaskGroup(of: ([Double], Int).self) { group in
            for _ in 0..<callers {
                group.addTask {
                    var mine: [Double] = []
                    var bytes = 0
                    while Date().timeIntervalSince(started) < seconds {
                        let request = requests.randomElement()!
                        let t0 = Date()
                        let response = await api(request)
                        mine.append(Date().timeIntervalSince(t0))
                        guard response.status == 200 else {
                            throw BenchmarkUsageError(message: "GET \(request.rawPath) answered \(response.status)")
                        }
                        bytes = response.body.count
                    }
                    return (mine, bytes)
                }
            }
            var all: [Double] = []
            var bytes = 0
            for try await (mine, last) in group {
                all += mine
                bytes = last
            }
            return (all.sorted(), bytes)
        }
        return HandlerReads(
            perSecond: Double(latencies.count) / Date().timeIntervalSince(started), p50: latencies[latencies.count / 2],
            p99: latencies[min(latencies.count - 1, latencies.count * 99 / 100)], bytes: bytes)
    }

    /// `label: N/s, p50 … ms, p99 … ms`.
    func line(_ label: String) -> String {
        String(format: "%@: %.0f/s, p50 %.2f ms, p99 %.2f ms", label, perSecond, p50 * 1e3, p99 * 1e3)
    }
}

extension VisitCommandHandler {
    /// Runs `commands` through `executeBatch` 200 at a time (the batcher's group commit, without its queue);
    /// any refusal stops the benchmark.
    func executeInBatches(_ commands: [VisitCommand], pool: PostgresPool) async throws {
        for start in stride(from: 0, to: commands.count, by: 200) {
            let batch = Array(commands[start..<min(start + 200, commands.count)])
            let outcomes = try await pool.withConnection { executeBatch(batch, on: $0) }
            for outcome in outcomes { _ = try outcome.get() }
        }
    }
}
