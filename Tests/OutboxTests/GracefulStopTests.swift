import APNs
import APNsSimulator
import Foundation
import Outbox
import OutboxTestSupport
import Runtime
import TestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// The ordered shutdown `serve` runs on SIGTERM: the worker stops claiming, the send already on the wire
/// finishes and is recorded, and only then does the APNs client close (and the pool after it).
@Suite(.timeLimit(.minutes(2))) struct GracefulStopTests {
    let now = Int64(Date().timeIntervalSince1970)

    @Test func aSendInFlightAtGracefulStopCompletesAndIsRecordedAsSent() async throws {
        try await withOutboxFixture { f in
            try await withResource({ try await SimulatorWireTests.Wire.start() }, close: { await $0.stop() }) { wire in
                try await f.registerActivity(visit: "v-1", activity: "a-1", token: token("a1"))
                // APNs answers slowly: the push is still on the wire when the stop comes.
                wire.simulator.inject(FaultSettings(latency: .init(milliseconds: 1500)))
                let worker = f.worker(wire.sender)
                // The stages `livevisits serve` uses: the APNs client, then what claims work.
                let group = ServiceGroup(stages: [[wire.client], [worker]], signals: nil)
                let running = Task { try await group.run() }
                _ = try await f.enqueue(update("v-1", timestamp: now))

                // The request reached the simulator (which holds the answer back for 1.5 s); stop now.
                try await eventually("the push on the wire", within: 30) { wire.simulator.statistics().requestsTotal > 0 }
                running.cancel()
                try await running.value

                #expect(worker.isStopping)
                #expect(try await f.count(.sent) == 1, "the send on the wire at the stop was not recorded as sent")
                #expect(try await f.count(.pending) + f.count(.sending) == 0)
                #expect(wire.simulator.deliveries().map(\.status) == [200])
                // The client closed after the worker returned: a send now fails at once as shut down.
                let late = await wire.client.send(
                    APNsRequest(
                        deviceToken: token("a1"), environment: .sandbox, priority: .low, expiration: 0,
                        apnsId: UUID().uuidString.lowercased(), body: Array(#"{"aps":{}}"#.utf8)))
                #expect(late.classification == .retryable)
            }
        }
    }

    /// The same through a real `livevisits worker` process and SIGTERM, as an orchestrator stops it.
    @Test func sigtermToAWorkerProcessLetsTheSendOnTheWireFinishAndExitsZero() async throws {
        try await withOutboxFixture { f in
            try await withResource({ try await WorkerProcess.prepare() }, close: { await $0.stop() }) { rig in
                let simulator = rig.simulator
                try await f.registerActivity(visit: "v-1", activity: "a-1", token: token("a1"))
                simulator.inject(FaultSettings(latency: .init(milliseconds: 1500)))
                _ = try await f.enqueue(update("v-1", timestamp: now))
                let worker = try rig.start(databaseURL: f.url)

                do {
                    try await eventually("the push on the wire", within: 60) {
                        simulator.statistics().requestsTotal > 0 || !worker.isRunning
                    }
                } catch {
                    worker.signal(SIGKILL)
                    _ = await worker.wait()
                    throw error
                }
                guard worker.isRunning else {
                    _ = await worker.wait()
                    Issue.record("the worker exited before the push reached the simulator")
                    return
                }
                worker.signal(SIGTERM)
                let status = await worker.stop(SIGTERM, killAfter: 30)
                #expect(status == 0, "exit status after SIGTERM")
                #expect(try await f.count(.sent) == 1, "the send on the wire at SIGTERM was not recorded as sent")
                #expect(simulator.deliveries().map(\.status) == [200])
            }
        }
    }
}
