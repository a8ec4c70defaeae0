import EventStore
import Foundation
import Outbox
import OutboxTestSupport
import Postgres
import Retention
import Runtime
import Synchronization
import TestSupport
import Testing

/// Contract §10, retention: what is old goes in batches, what is fresh or in flight stays, events are never
/// touched, one pass at a time, and the outbox and the event store keep working during a large prune.
@Suite(.serialized, .timeLimit(.minutes(10))) struct PruneTests {
    static let day = 86_400.0

    /// One delivery row straight in SQL (what the outbox leaves behind), with `attempts` attempt rows.
    static func insertDelivery(
        _ c: PostgresConnection, visit: String, state: String, createdAt: Double, finishedAt: Double?, attempts: Int = 1
    ) throws -> Int64 {
        let id = try c.query(
            """
            INSERT INTO deliveries (apns_id, target, visit_id, customer_id, kind, priority, aps_timestamp, body, visit_version,
                                    event_recorded_at, created_at, state, next_attempt_at, finished_at, attempts)
            VALUES (gen_random_uuid(), 'activity:' || \(visit) || '/a', \(visit), 'c-1', 'update', 5, 1, '{}', 1,
                    \(createdAt), \(createdAt), \(state), \(createdAt), \(finishedAt.map { String($0) })::float8, \(attempts))
            RETURNING id
            """
        ).first!.int64("id")
        if attempts > 0 {
            try c.query(
                """
                INSERT INTO delivery_attempts (delivery_id, attempt, attempted_at, status)
                SELECT \(id), n, \(createdAt), 200 FROM generate_series(1, \(attempts)) AS n
                """)
        }
        return id
    }

    @Test func agedRowsGoFreshOnesStayAndInFlightDeliveriesAreNeverTouched() async throws {
        try await withTestDatabase(poolSize: 4) { _, pool in
            let now = Date().timeIntervalSince1970
            let old = now - 40 * PruneTests.day
            let fresh = now - 1 * PruneTests.day
            let nowMs = Int64(now * 1000)
            let ids = try await pool.withConnection { c -> [String: Int64] in
                var ids: [String: Int64] = [:]
                ids["oldSent"] = try PruneTests.insertDelivery(
                    c, visit: "v-1", state: "sent", createdAt: old, finishedAt: old, attempts: 2)
                ids["oldDead"] = try PruneTests.insertDelivery(
                    c, visit: "v-1", state: "dead", createdAt: old, finishedAt: old, attempts: 3)
                ids["freshSent"] = try PruneTests.insertDelivery(
                    c, visit: "v-1", state: "sent", createdAt: fresh, finishedAt: fresh)
                ids["oldPending"] = try PruneTests.insertDelivery(
                    c, visit: "v-1", state: "pending", createdAt: old, finishedAt: nil)
                // An in-flight delivery even with a stale finished_at (never true in practice) is not touched.
                ids["oldSending"] = try PruneTests.insertDelivery(
                    c, visit: "v-1", state: "sending", createdAt: old, finishedAt: old)
                try c.execute(
                    script: """
                        INSERT INTO http_idempotency (key_id, route, idempotency_key, request_body, created_at)
                        VALUES ('k', 'POST /v1/visits', 'old', 'sha256:x', now() - interval '49 hours'),
                               ('k', 'POST /v1/visits', 'fresh', 'sha256:x', now() - interval '47 hours');
                        """)
                // Tokens: retired long ago, retired lately, live; and live ones of visits that ended 13 h and 1 h ago.
                // A visit still active keeps its retired activities whatever their age (the ledger's memory).
                for (visit, activity, retired) in [
                    ("v-ended-lately", "retired-old", nowMs - 40 * 86_400_000),
                    ("v-live", "dismissed-old", nowMs - 40 * 86_400_000), ("v-live", "retired-fresh", nowMs - 86_400_000),
                    ("v-live", "live", nil as Int64?), ("v-ended-long", "live", nil), ("v-ended-lately", "live", nil),
                ] {
                    try c.query(
                        """
                        INSERT INTO live_activities (visit_id, activity_id, push_token, environment, registered_at_ms, retired_at_ms)
                        VALUES (\(visit), \(activity), 'aa', 'sandbox', \(nowMs), \(retired))
                        """)
                }
                try c.query(
                    """
                    INSERT INTO push_to_start_tokens (customer_id, device_id, push_token, environment, registered_at_ms, retired_at_ms)
                    VALUES ('c-1', 'old', 'aa', 'sandbox', \(nowMs), \(nowMs - 40 * 86_400_000)),
                           ('c-1', 'live', 'aa', 'sandbox', \(nowMs), NULL)
                    """)
                for (visit, ended, at) in [
                    ("v-live", false, now - 3_600), ("v-ended-long", true, now - 13 * 3_600),
                    ("v-ended-lately", true, now - 3_600),
                ] {
                    try EventStore.append(
                        AppendRequest(
                            streamName: "visit-" + visit, events: [NewEvent(type: "completed", data: #"{"schemaVersion":1}"#)],
                            recordedAt: at), on: c)
                    try c.query(
                        """
                        INSERT INTO visits (visit_id, customer_id, technician_id, status, ended, version, scheduled_at, relevance_score, state)
                        VALUES (\(visit), 'c-1', 't-1', 'completed', \(ended), 1, \(Int64(at)), 0, '{}')
                        """)
                }
                // Channels: an ended visit's (13 h ago) goes, except one still being created; a visit that
                // ended lately keeps its channel.
                try c.execute(
                    script: """
                        INSERT INTO channels (visit_id, environment, customer_id, target, channel_id, state, claimed_at)
                        VALUES ('v-ended-long', 'sandbox', 'c-1', 'channel:a', 'ch-a', 'ended', \(now)),
                               ('v-ended-long', 'production', 'c-1', 'channel:b', NULL, 'creating', \(now)),
                               ('v-ended-lately', 'sandbox', 'c-1', 'channel:c', 'ch-c', 'ended', \(now)),
                               ('v-live', 'sandbox', 'c-1', 'channel:d', 'ch-d', 'active', \(now));
                        INSERT INTO tracking_links (visit_id, token_hash, created_at)
                        VALUES ('v-ended-long', 'h-a', \(now)), ('v-ended-lately', 'h-b', \(now)), ('v-live', 'h-c', \(now));
                        """)
                return ids
            }
            let metrics = Metrics()
            let report = try await Prune(pool: pool, metrics: metrics).run()
            #expect(report.ran)
            let printed = Dictionary(uniqueKeysWithValues: report.removed.map { ($0.table, $0.rows) })
            #expect(printed["deliveries"] == 2)
            #expect(printed["delivery_attempts"] == 5)
            #expect(printed["http_idempotency"] == 1)
            #expect(printed["live_activities"] == 2, "one retired long ago, one of the visit that ended 13 h ago")
            #expect(printed["push_to_start_tokens"] == 1)
            #expect(printed["notification_tokens"] == 0, "every table is printed, 0 included")
            #expect(printed["channels"] == 1, "the ended visit's channel, not the one being created")
            #expect(printed["tracking_links"] == 1, "the link of the visit that ended 13 h ago")
            #expect(report.lines.contains("prune: deliveries 2"))
            #expect(metrics.value("livevisits_pruned_rows_total", labels: ["table": "delivery_attempts"]) == 5)

            let left = try await pool.withConnection { c in
                (
                    try c.query("SELECT id FROM deliveries ORDER BY id").rows.map { try $0.int64("id") },
                    try c.query("SELECT count(*) AS n FROM delivery_attempts").first!.int("n"),
                    try c.query("SELECT idempotency_key FROM http_idempotency").rows.map { try $0.string("idempotency_key") },
                    try c.query("SELECT visit_id || '/' || activity_id AS a FROM live_activities ORDER BY 1").rows.map {
                        try $0.string("a")
                    },
                    try c.query("SELECT count(*) AS n FROM events").first!.int("n"),
                    try c.query("SELECT target FROM channels ORDER BY 1").rows.map { try $0.string("target") }
                )
            }
            #expect(left.5 == ["channel:b", "channel:c", "channel:d"])
            let links = try await pool.withConnection { c in
                try c.query("SELECT visit_id FROM tracking_links ORDER BY 1").rows.map { try $0.string("visit_id") }
            }
            #expect(links == ["v-ended-lately", "v-live"])
            #expect(left.0 == [ids["freshSent"]!, ids["oldPending"]!, ids["oldSending"]!].sorted())
            #expect(left.1 == 3, "the attempts of the three deliveries that stay")
            #expect(left.2 == ["fresh"])
            #expect(left.3 == ["v-ended-lately/live", "v-live/dismissed-old", "v-live/live", "v-live/retired-fresh"])
            #expect(left.4 == 3, "events are never deleted")

            // A second pass finds nothing; a pass while another holds the fleet's lock does nothing.
            #expect(try await Prune(pool: pool).run().removed.allSatisfy { $0.rows == 0 })
            let holder = try PostgresConnection(url: pool.configuration.url)
            try holder.query("SELECT pg_advisory_lock(\(Prune.lockKey))")
            #expect(try await Prune(pool: pool).run().ran == false)
            try holder.query("SELECT pg_advisory_unlock(\(Prune.lockKey))")
        }
    }

    /// A prune of 1,000,000 aged rows (500,000 deliveries with one attempt each) while appends and deliveries
    /// go on: every append commits, every delivery enqueued meanwhile is sent, and no batch is over 1,000 rows.
    @Test func appendsAndDeliveriesKeepWorkingDuringAPruneOfAMillionRows() async throws {
        try await withOutboxFixture { fixture in
            let pool = fixture.pool
            let old = Date().timeIntervalSince1970 - 40 * PruneTests.day
            try await pool.withConnection { c in
                try c.execute(
                    script: """
                        INSERT INTO deliveries (apns_id, target, visit_id, customer_id, kind, priority, aps_timestamp, body,
                                                visit_version, event_recorded_at, created_at, state, next_attempt_at, finished_at, attempts)
                        SELECT gen_random_uuid(), 'activity:v-old-' || n || '/a', 'v-old-' || (n % 1000), 'c-1', 'update', 5, 1, '{}', 1,
                               \(old), \(old), 'sent', \(old), \(old) + n * 0.001, 1
                        FROM generate_series(1, 500000) AS n;
                        INSERT INTO delivery_attempts (delivery_id, attempt, attempted_at, status)
                        SELECT id, 1, \(old), 200 FROM deliveries;
                        ANALYZE deliveries; ANALYZE delivery_attempts;
                        """)
            }
            let store = EventStore(pool: pool)
            let sender = RecordingSender()
            let worker = fixture.worker(sender)
            try await fixture.registerActivity(visit: "v-new", activity: "a-1", token: token("prune-new"))

            let largestBatch = Mutex(0)
            let prune = Task {
                try await Prune(pool: pool).run { _, rows in largestBatch.withLock { $0 = max($0, rows) } }
            }
            let done = Mutex(false)
            let watcher = Task {
                _ = try? await prune.value
                done.withLock { $0 = true }
            }
            // Appends and deliveries while the prune runs, until it is done (and at least 20 appends).
            var appended = 0
            var duringPrune = 0
            var enqueued = 0
            repeat {
                try await store.append(
                    AppendRequest(
                        streamName: "visit-v-new", events: [NewEvent(type: "progress", data: #"{"schemaVersion":1}"#)]))
                appended += 1
                if !done.withLock({ $0 }) { duringPrune += 1 }
                if appended % 5 == 0 {
                    let at = Int64(Date().timeIntervalSince1970) + Int64(appended)
                    _ = try await fixture.enqueue(update("v-new", timestamp: at, version: Int64(appended)))
                    enqueued += 1
                    _ = try await worker.runOnce()
                }
            } while !done.withLock({ $0 }) || appended < 20
            await watcher.value
            let report = try await prune.value
            try await fixture.drain(worker)
            let removed = Dictionary(uniqueKeysWithValues: report.removed.map { ($0.table, $0.rows) })
            #expect(removed["deliveries"] == 500_000)
            #expect(removed["delivery_attempts"] == 500_000)
            #expect(largestBatch.withLock { $0 } <= 1_000, "no transaction deletes more than 1,000 rows")
            #expect(try await EventStore.readStreamCount(pool, "visit-v-new") == appended, "every append committed")
            #expect(try await fixture.count(.pending) == 0)
            #expect(sender.calls.count >= 1, "deliveries went out during the prune")
            #expect(try await fixture.count(.sent) >= 1)
            #expect(enqueued >= 4)
            #expect(duringPrune >= 10, "appends committed while the prune ran: \(duringPrune)")
        }
    }
}

extension EventStore {
    static func readStreamCount(_ pool: PostgresPool, _ stream: String) async throws -> Int {
        try await pool.withConnection { try EventStore.readStream(stream, on: $0).count }
    }
}
