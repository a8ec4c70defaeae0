import APNs
import Foundation
import Runtime
import Synchronization

/// Throughput of the APNs client: many small Live Activity pushes over one connection with many
/// streams in flight (`livevisits-bench apns`, against the simulator).
enum APNsBenchmark {
    /// What a run measured.
    struct Report: Sendable, CustomStringConvertible {
        let pushes: Int
        let succeeded: Int
        let failed: Int
        /// Failures by metric label (reason or local cause).
        let failures: [String: Int]
        let concurrency: Int
        let seconds: Double
        var pushesPerSecond: Double { seconds > 0 ? Double(pushes) / seconds : 0 }
        /// Latency percentiles, seconds.
        let p50: Double
        let p99: Double
        /// CPU seconds (user + system) the whole process used during the run: the client, and the
        /// simulator too when it runs in the same process.
        let processCPUSeconds: Double
        /// Process CPU per push, in microseconds.
        var cpuMicrosecondsPerPush: Double { pushes > 0 ? processCPUSeconds / Double(pushes) * 1e6 : 0 }

        var description: String {
            String(
                format: "%d pushes (%d ok, %d failed) with %d in flight in %.2f s: %.0f pushes/s, p50 %.1f ms, p99 %.1f ms",
                pushes, succeeded, failed, concurrency, seconds, pushesPerSecond, p50 * 1000, p99 * 1000)
                + String(
                    format: ", process CPU %.2f s (%.0f µs/push, %.0f%% of the wall time)", processCPUSeconds,
                    cpuMicrosecondsPerPush, seconds > 0 ? processCPUSeconds / seconds * 100 : 0)
                + (failures.isEmpty ? "" : " failures: \(failures.sorted { $0.key < $1.key })")
        }
    }

    /// Sends `count` pushes to `deviceToken` keeping `concurrency` in flight.
    static func run(
        client: APNsClient, deviceToken: String, environment: APNsEnvironment = .sandbox, count: Int = 20_000,
        concurrency: Int = 500
    ) async -> Report {
        let next = Ticket()
        let cpuBefore = CPUSample.thisProcess()
        let started = ContinuousClock.now
        let perWorker = await withTaskGroup(of: ([Double], [String: Int]).self) { group in
            for _ in 0..<max(1, concurrency) {
                group.addTask {
                    var latencies: [Double] = []
                    var failures: [String: Int] = [:]
                    while true {
                        let index = next.take()
                        guard index < count else { break }
                        let body =
                            #"{"aps":{"timestamp":\#(1_790_000_000 + index),"event":"update","content-state":{"status":"enRoute","kilometresAway":\#(index % 50)}}}"#
                        let request = APNsRequest(
                            deviceToken: deviceToken, environment: environment, priority: .low, expiration: 0,
                            apnsId: UUID().uuidString.lowercased(), body: Array(body.utf8))
                        let result = await client.send(request)
                        latencies.append(result.latency)
                        if case .failure(let failure) = result { failures[failure.reasonLabel, default: 0] += 1 }
                    }
                    return (latencies, failures)
                }
            }
            return await group.reduce(into: [([Double], [String: Int])]()) { $0.append($1) }
        }
        let elapsed = ContinuousClock.now - started
        let cpu = CPUSample.thisProcess() - cpuBefore
        let seconds = elapsed.inSeconds
        let latencies = perWorker.flatMap(\.0).sorted()
        var failures: [String: Int] = [:]
        for (_, counts) in perWorker { failures.merge(counts, uniquingKeysWith: +) }
        func percentile(_ p: Double) -> Double {
            latencies.isEmpty ? 0 : latencies[min(latencies.count - 1, Int(Double(latencies.count) * p))]
        }
        let failed = failures.values.reduce(0, +)
        return Report(
            pushes: latencies.count, succeeded: latencies.count - failed, failed: failed, failures: failures,
            concurrency: concurrency, seconds: seconds, p50: percentile(0.5), p99: percentile(0.99),
            processCPUSeconds: cpu)
    }

    /// Hands out push indexes to the workers.
    private final class Ticket: Sendable {
        private let counter = Atomic<Int>(0)
        func take() -> Int { counter.add(1, ordering: .relaxed).oldValue }
    }
}
