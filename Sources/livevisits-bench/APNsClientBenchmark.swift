import APNs
import APNsSimulator
import Foundation

/// `livevisits-bench apns [--count N] [--concurrency 100,500]`: N small liveactivity pushes from the APNs
/// client to the project's simulator (in this process) over one HTTP/2 connection, at each concurrency;
/// prints pushes/s, p50/p99 and process CPU per push (client + simulator share the two cores).
struct APNsClientBenchmark {
    static let summary = "APNs client → simulator over one HTTP/2 connection (default 20,000 pushes, 100 and 500 streams)"
    var count = 20_000
    var concurrencies = [100, 500]

    init(arguments: [String]) throws {
        var rest = arguments[...]
        while let flag = rest.popFirst() {
            switch flag {
            case "--count":
                guard let n = rest.popFirst().flatMap(Int.init), n > 0 else { throw BenchmarkUsageError(message: "--count needs a number") }
                count = n
            case "--concurrency":
                let list = (rest.popFirst() ?? "").split(separator: ",").compactMap { Int($0) }
                guard !list.isEmpty, list.allSatisfy({ $0 > 0 }) else { throw BenchmarkUsageError(message: "--concurrency takes e.g. 100,500") }
                concurrencies = list
            default:
                throw BenchmarkUsageError(message: "unknown option \(flag) for apns")
            }
        }
    }

    func run() async throws {
        for concurrency in concurrencies {
            let (simulator, client) = try await OutboxBenchmark.startSimulator()
            let report = await APNsBenchmark.run(
                client: client, deviceToken: String(repeating: "ab", count: 32), count: count, concurrency: concurrency)
            await client.shutdown()
            let statistics = simulator.statistics()
            await simulator.stop()
            print("apns: \(concurrency) streams: \(report); connections \(statistics.connectionsAccepted), "
                + "max concurrent streams seen \(statistics.maximumConcurrentStreams)")
        }
    }
}
