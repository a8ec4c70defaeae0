import Foundation
import HTTPAPI
import HTTPServer
import Outbox
import PersonalData
import Postgres
import Runtime
import VisitProjections

extension APIBenchmark {
    /// The in-process side of `--get`: the same `GET /v1/visits/{id}` through the API's handler (routing,
    /// authentication, the read, the opening of the sealed fields), without HTTP, with the caches of a
    /// `serve` process and their listeners running.
    final class InProcessReader: Sendable {
        let handler: HTTPHandler
        let key: String
        private let listeners: Task<Void, any Error>

        init(pool: PostgresPool, readModel: VisitReadModel, personalData: PersonalDataKeys, key: String) throws {
            let environment = APIEnvironment(
                pool: pool, readModel: readModel, outbox: Outbox(pool: pool),
                migrator: Migrator(directory: URL(fileURLWithPath: "Migrations")), metrics: Metrics(),
                personalData: personalData, limits: Self.limits)
            handler = LiveVisitsAPI(environment: environment).handler()
            self.key = key
            let services: [any Service] = [
                environment.keyCache.listener(url: pool.configuration.url),
                environment.dataKeyCache.listener(url: pool.configuration.url),
            ]
            listeners = Task {
                try await withThrowingTaskGroup(of: Void.self) { group in
                    for service in services { group.addTask { try await service.run() } }
                    try await group.waitForAll()
                }
            }
        }

        func stop() { listeners.cancel() }

        /// A `serve` process's limits, but a rate far above the load one key drives here (its cost stays in).
        static var limits: RequestLimits {
            var limits = RequestLimits.standard
            limits.requestsPerSecond = 1_000_000
            return limits
        }

        /// `concurrency` tasks reading random visits of the set for `duration` seconds.
        func run(prefix: String, visits: Int, concurrency: Int, duration: Int) async throws -> Figures {
            let deadline = Date().addingTimeInterval(Double(duration))
            let handler = self.handler
            let headers: HTTPHeaders = ["Authorization": "Bearer \(key)"]
            let started = Date()
            let (latencies, errors) = await withTaskGroup(of: ([Double], Int).self) { group in
                for _ in 0..<concurrency {
                    group.addTask {
                        var generator = SystemRandomNumberGenerator()
                        var mine: [Double] = []
                        var errors = 0
                        while Date() < deadline {
                            let visit = "\(prefix)\(Int.random(in: 0..<visits, using: &generator))"
                            let t0 = Date()
                            let response = await handler(
                                HTTPRequest(method: .get, rawPath: "/v1/visits/\(visit)", headers: headers))
                            if response.status != 200 { errors += 1 }
                            mine.append(Date().timeIntervalSince(t0))
                        }
                        return (mine, errors)
                    }
                }
                return await group.reduce(into: ([Double](), 0)) {
                    $0.0 += $1.0
                    $0.1 += $1.1
                }
            }
            return Figures(latencies: latencies, elapsed: Date().timeIntervalSince(started), errors: errors, meanBatch: 0)
        }
    }
}
