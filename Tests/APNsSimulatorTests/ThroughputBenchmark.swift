import APNsSimulator
import Foundation
import Testing

/// Prints the simulator's throughput under curl's multiplexing client; asserts only correctness.
/// Run with `APNS_SIM_BENCH=1 swift test --filter ThroughputBenchmark` (20,000 pushes by default,
/// `APNS_SIM_BENCH_PUSHES` to change).
@Suite("Throughput benchmark", .enabled(if: ProcessInfo.processInfo.environment["APNS_SIM_BENCH"] != nil))
struct ThroughputBenchmark {
    @Test("pushes per second over one connection with up to 500 concurrent streams")
    func throughput() async throws {
        let h = try await SimulatorHarness.start { $0.logger = .init(label: "bench") }
        defer { Task { await h.simulator.stop() } }
        let count = Int(ProcessInfo.processInfo.environment["APNS_SIM_BENCH_PUSHES"] ?? "") ?? 20_000
        let tokens = (0..<count).map { SimulatorHarness.token($0) }
        let selfBefore = ThroughputBenchmark.cpuSeconds(RUSAGE_SELF)
        let childrenBefore = ThroughputBenchmark.cpuSeconds(RUSAGE_CHILDREN)
        let started = Date()
        let parallelMax = Int(ProcessInfo.processInfo.environment["APNS_SIM_BENCH_PARALLEL"] ?? "") ?? 100
        let run = try await h.pushMany(tokens: tokens, parallel: true, parallelMax: parallelMax)
        let seconds = Date().timeIntervalSince(started)
        let simulatorCPU = ThroughputBenchmark.cpuSeconds(RUSAGE_SELF) - selfBefore
        let curlCPU = ThroughputBenchmark.cpuSeconds(RUSAGE_CHILDREN) - childrenBefore
        #expect(run.statuses.count == count)
        #expect(run.statuses.allSatisfy { $0 == 200 }, "\(run.result.stderr.prefix(500))")
        let stats = h.simulator.statistics()
        print(
            "apns-sim throughput: \(count) pushes in \(String(format: "%.2f", seconds)) s = "
                + "\(Int(Double(count) / seconds)) pushes/s; connections \(stats.connectionsAccepted), "
                + "max concurrent streams \(stats.maximumConcurrentStreams) (client: curl -Z --parallel-max \(parallelMax))")
        var perConnection: [Int: Int] = [:]
        for d in h.simulator.deliveries() { perConnection[d.connectionID, default: 0] += 1 }
        print("pushes per connection (largest): \(Array(perConnection.values.sorted().reversed().prefix(8)))")
        print(
            "cpu: simulator process \(String(format: "%.2f", simulatorCPU)) s "
                + "(\(String(format: "%.0f", simulatorCPU / Double(count) * 1_000_000)) µs/push), "
                + "curl \(String(format: "%.2f", curlCPU)) s")
    }

    static func cpuSeconds(_ who: __rusage_who) -> Double {
        var usage = rusage()
        getrusage(__rusage_who_t(who.rawValue), &usage)
        return Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec)
            + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1_000_000
    }
}
