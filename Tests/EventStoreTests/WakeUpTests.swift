import EventStore
import Foundation
import Postgres
import Runtime
import Synchronization
import TestSupport
import Testing

/// How readers of the log learn about new events (LISTEN/NOTIFY), and the horizon metric.
@Suite(.timeLimit(.minutes(5))) struct WakeUpTests {
    /// A commit announced with `eventsCommitted` is heard on `EventStore.channel` by a listener.
    @Test func aCommittedAppendIsAnnouncedOnTheEventsChannel() async throws {
        try await withTestDatabase { url, pool async throws in
            let store = EventStore(pool: pool)
            let notifications = Counter()
            let listener = PostgresListener(url: url, channels: [EventStore.channel]) { channel, _ in
                if channel == EventStore.channel { notifications.add() }
            }
            let listening = Task { try await listener.run() }
            defer { listening.cancel() }
            try await eventually("the listener listening", within: 30) {
                listener.isListening.load(ordering: .sequentiallyConsistent)
            }
            let before = notifications.value
            try await store.append(AppendRequest(streamName: "announced", events: [NewEvent(type: "e", data: "{}")]))
            try await eventually("the append announced", within: 30) { notifications.value > before }
        }
    }

    /// A pool's NOTIFYs are one coalesced stream over every channel: a burst of pokes on two channels is
    /// heard on both, in far fewer notifications than pokes, and a poke after the burst is heard too.
    @Test func aPoolsNotificationsCoalesceAcrossChannels() async throws {
        try await withTestDatabase { url, pool async throws in
            let heard = Mutex<[String: Int]>([:])
            let listener = PostgresListener(url: url, channels: ["lv_test_a", "lv_test_b", "lv_test_marker"]) { channel, _ in
                if !channel.isEmpty { heard.withLock { $0[channel, default: 0] += 1 } }
            }
            let listening = Task { try await listener.run() }
            defer { listening.cancel() }
            try await eventually("the listener listening") {
                listener.isListening.load(ordering: .sequentiallyConsistent)
            }

            for _ in 0..<200 {
                pool.notifyAfterCommit("lv_test_a")
                pool.notifyAfterCommit("lv_test_b")
            }
            // A poke on a third channel after the burst: once it is heard, so is every NOTIFY the burst caused
            // (the pool sends them in order, and the marker's travels with or after the last of them).
            pool.notifyAfterCommit("lv_test_marker")
            try await eventually("the marker after the burst") { heard.withLock { $0["lv_test_marker"] != nil } }
            let afterBurst = heard.withLock { $0 }
            #expect(afterBurst["lv_test_a"] != nil && afterBurst["lv_test_b"] != nil, "both channels are heard")
            #expect(afterBurst.values.allSatisfy { $0 < 50 }, "200 pokes per channel coalesce: \(afterBurst)")

            pool.notifyAfterCommit("lv_test_b")
            try await eventually("the poke after the burst heard") {
                heard.withLock { $0["lv_test_b"] ?? 0 } > afterBurst["lv_test_b"] ?? 0
            }
            #expect(heard.withLock { $0["lv_test_a"] } == afterBurst["lv_test_a"], "a channel not poked is not notified")
        }
    }

    @Test func theHorizonMetricReportsTheOldestOpenTransaction() async throws {
        try await withTestDatabase { url, pool async throws in
            let store = EventStore(pool: pool)
            let held = try PostgresConnection(url: TestDatabase.url(url, adding: "application_name=long-open"))
            try held.execute(script: "BEGIN")
            try held.query("SELECT pg_current_xact_id()")
            func age(_ text: String) -> Double? {
                let sample = text.split(separator: "\n").first { $0.hasPrefix("livevisits_snapshot_horizon_age_seconds ") }
                return sample.flatMap { Double($0.split(separator: " ")[1]) }
            }
            var text = ""
            // Some transaction is holding the horizon (ours at least), so the age is the oldest one's: above zero
            // once any time has passed since it began.
            try await eventually("a horizon age above zero") {
                text = await SnapshotHorizonMetric(store: store).render()
                return (age(text) ?? 0) > 0
            }
            try held.execute(script: "ROLLBACK")
            #expect(text.contains("# TYPE livevisits_snapshot_horizon_age_seconds gauge"))
            #expect(try #require(age(text)) > 0)

            let registry = Metrics()
            SnapshotHorizonMetric(store: store).install(in: registry)
            #expect(await registry.render().contains("livevisits_snapshot_horizon_age_seconds "))
        }
    }

    @Test func theHorizonMetricLeavesOutTheSampleWhenTheDatabaseIsDown() async throws {
        let pool = PostgresPool(
            configuration: PostgresConfiguration(
                url: "postgresql://livevisits@127.0.0.1:1/none", size: 1, acquireTimeoutSeconds: 1, connectTimeoutSeconds: 1))
        let text = await SnapshotHorizonMetric(store: EventStore(pool: pool)).render()
        #expect(text.contains("# TYPE livevisits_snapshot_horizon_age_seconds gauge"))
        #expect(!text.contains("livevisits_snapshot_horizon_age_seconds 0"))
        #expect(text.split(separator: "\n").allSatisfy { $0.hasPrefix("#") })
    }
}

/// A thread-safe counter for callbacks that run on the listener's or a database thread.
final class Counter: @unchecked Sendable {
    // Guarded by `lock`.
    private let lock = NSLock()
    private var count = 0
    func add() { lock.withLock { count += 1 } }
    var value: Int { lock.withLock { count } }
}
