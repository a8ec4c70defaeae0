import APNs
import APNsSimulator
import Foundation
import Runtime

/// `livevisits-bench apns [--count N] [--concurrency 100,500]`: N small liveactivity pushes from the APNs
/// client to the project's simulator (in this process) over one HTTP/2 connection, at each concurrency;
/// prints pushes/s, p50/p99 and process CPU per push (client + simulator share the two cores).
struct APNsClientBenchmark {
    static let summary = "APNs client → simulator over one HTTP/2 connection (default 20,000 pushes, 100 and 500 streams)"
    var count = 20_000
    var concurrencies = [100, 500]

    static let syntax = CommandSyntax(
        command: "livevisits-bench apns", summary: summary,
        options: [
            .value("--count", "N", "pushes per concurrency (default 20000)"),
            .value("--concurrency", "LIST", "streams in flight, comma-separated (default 100,500)"),
        ])

    init(arguments: [String]) throws {
        let parsed = try Self.syntax.parse(arguments)
        count = try parsed.integer("--count", in: 1...Int.max) ?? count
        concurrencies = try parsed.integers("--concurrency", in: 1...Int.max) ?? concurrencies
    }

    func run() async throws {
        for concurrency in concurrencies {
            let (simulator, client) = try await OutboxBenchmark.startSimulator()
            let report = await APNsBenchmark.run(
                client: client, deviceToken: String(repeating: "ab", count: 32), count: count, concurrency: concurrency)
            await client.shutdown()
            let statistics = simulator.statistics()
            await simulator.stop()
            print(
                "apns: \(concurrency) streams: \(report); connections \(statistics.connectionsAccepted), "
                    + "max concurrent streams seen \(statistics.maximumConcurrentStreams)")
        }
    }
}
