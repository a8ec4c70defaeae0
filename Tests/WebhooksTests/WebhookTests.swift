import Foundation
import JSON
import LiveActivityLedger
import Outbox
import OutboxTestSupport
import PersonalData
import Postgres
import Retention
import Runtime
import Synchronization
import TestSupport
import Testing
import Webhooks

/// Webhooks end to end against a real receiver over HTTP: what is sent, signed how, in which order, retried
/// and given up how, and that a receiver that never answers holds up nothing else.
@Suite(.timeLimit(.minutes(2))) struct WebhookTests {
    /// An appended event arrives as `visit.event` whose data is the history entry, signed over `t.body`.
    @Test func anEventArrivesSignedWithItsHistoryEntry() async throws {
        try await withWebhookWorld { world in
            try await world.append("v-1", version: 1, type: "scheduled", data: #"{"note":"hi"}"#, actor: "dispatcher")
            try await eventually("the webhook arrived", within: 30) { world.receiver.received.count >= 1 }
            let received = try #require(world.receiver.received.first)
            #expect(WebhookReceiver.verify(received, secret: WebhookWorld.secret))
            #expect(!WebhookReceiver.verify(received, secret: "another secret"))
            let json = received.json
            #expect(json.objectMembers?.map(\.key) == ["id", "type", "visitId", "occurredAt", "data"])
            #expect(json["type"]?.stringValue == "visit.event")
            #expect(json["visitId"]?.stringValue == "v-1")
            let entry = try #require(json["data"])
            #expect(entry.objectMembers?.map(\.key) == ["position", "version", "type", "data", "recordedAt", "actor"])
            #expect(entry["version"]?.integerValue == 1)
            #expect(entry["type"]?.stringValue == "scheduled")
            #expect(entry["data"]?["note"]?.stringValue == "hi")
            #expect(entry["actor"]?["role"]?.stringValue == "dispatcher")
            #expect(json["occurredAt"]?.integerValue == entry["recordedAt"]?.integerValue)
            let rows = try await world.webhookRows()
            #expect(rows.map(\.webhookId) == [json["id"]?.stringValue])
            try await eventually("recorded sent") { try await world.webhookRows().first?.state == .sent }
            // The signature's t is the sending time, close to now.
            let t = Int64(received.signature?.split(separator: ",").first?.dropFirst(2) ?? "") ?? 0
            #expect(abs(t - Int64(Date().timeIntervalSince1970)) < 300)
        }
    }

    /// A visit's webhooks arrive in order, its next one only after the previous got a 2xx: the first POST
    /// gets 500 and is retried with the same id and the same bytes before anything later of its visit goes.
    @Test func aVisitsWebhooksGoInOrderAndARetryRepeatsIdAndBody() async throws {
        // The retry waits up to a second; what comes meanwhile is due at once, and must wait behind it.
        try await withWebhookWorld(
            configure: { $0.backoff = Backoff(baseSeconds: 1, capSeconds: 1) },
            answer: { index, _ in index == 0 ? .status(500) : .status(200) }
        ) { world in
            try await world.append("v-1", version: 1, type: "scheduled")
            try await eventually("the first attempt recorded as failed", within: 30) {
                try await world.webhookRows().first.map { $0.attempts == 1 && $0.state == .pending } ?? false
            }
            try await world.append("v-1", version: 2, type: "enRoute")
            try await world.append("v-1", version: 3, type: "nearby")
            try await world.append("v-2", version: 1, type: "scheduled")
            try await eventually("all delivered", within: 30) {
                try await world.webhookRows().allSatisfy { $0.state == .sent } && world.receiver.received.count >= 5
            }
            let received = world.receiver.received
            let first = received[0]
            let v1 = received.filter { $0.visitId == "v-1" }
            #expect(v1.count == 4)
            #expect(v1[1].id == first.id && v1[1].body == first.body)
            #expect(v1.map { $0.json["data"]?["version"]?.integerValue } == [1, 1, 2, 3])
            #expect(received.allSatisfy { WebhookReceiver.verify($0, secret: WebhookWorld.secret) })
            let rows = try await world.webhookRows()
            #expect(rows.first?.attempts == 2 && rows.first?.lastStatus == 200)
            #expect(Set(received.compactMap(\.id)).count == 4)
        }
    }

    /// A receiver that keeps failing: retried with backoff on the worker's clock, dead 24 hours after the
    /// webhook was written, and then listed as dead; retried by an operator it goes with the same id and body.
    @Test func aWebhookDiesAfter24HoursAndAnOperatorRetriesIt() async throws {
        let clock = ManualClock(now: Date().timeIntervalSince1970)
        let failing = Atomic<Bool>(true)
        try await withWebhookWorld(
            clock: clock, configure: { $0.backoff = Backoff(baseSeconds: 60, capSeconds: 300) },
            answer: { _, _ in failing.load(ordering: .relaxed) ? .status(503) : .status(204) }
        ) { world in
            try await world.append("v-1", version: 1, type: "scheduled")
            try await eventually(
                "the webhook died", within: 60,
                between: {
                    clock.advance(by: 301)
                    world.worker.wakeUp.signal()
                }
            ) { try await world.webhookRows().first?.state == .dead }
            let dead = try #require(try await world.webhookRows().first)
            #expect(dead.attempts > 2 && dead.lastStatus == 503)
            #expect(clock.now() - dead.createdAt >= 24 * 3600)
            #expect(try await world.store.list(state: .dead).map(\.id) == [dead.id])
            let attempts = world.receiver.received.count
            failing.store(false, ordering: .relaxed)
            let requeued = try await world.store.retry(id: dead.id)
            #expect(requeued.state == .pending && requeued.webhookId == dead.webhookId)
            await #expect(throws: OutboxError.self) { try await world.store.retry(id: dead.id + 1000) }
            world.worker.wakeUp.signal()
            // Time passes on the worker's clock: its next claim waits `claimGatherSeconds` after the last.
            try await eventually(
                "sent after the retry", within: 30,
                between: {
                    clock.advance(by: 1)
                    world.worker.wakeUp.signal()
                }
            ) {
                try await world.webhookRows().first?.state == .sent
            }
            let received = world.receiver.received
            #expect(received.count == attempts + 1)
            #expect(Set(received.map(\.body)).count == 1)
        }
    }

    /// Under a trickle, each event its own commit and wake-up, the loops' claims start `claimGatherSeconds`
    /// apart: what the commits wrote meanwhile goes out in one claim, not a claim each.
    @Test func aTrickleOfWebhooksIsGatheredIntoOneClaim() async throws {
        let clock = ManualClock(now: Date().timeIntervalSince1970 + 3_600)  // every webhook written is due
        let interval = 5.0
        try await withWebhookWorld(
            clock: clock,
            configure: {
                $0.claimGatherSeconds = interval
                $0.pollIntervalSeconds = 600
            }
        ) { world in
            // Both loops claimed (nothing) at their start and wait for a wake-up.
            let waiting = await withDeadline(seconds: 20) { (try? await clock.waitForSleepers(2)) != nil }
            try #require(waiting == true, "the worker's loops never waited")
            for visit in ["v-1", "v-2", "v-3"] {
                try await world.append(visit, version: 1, type: "scheduled")
                world.worker.wakeUp.signal()
            }
            // Woken, each loop waits for its turn: one an interval after the last claim, the other two.
            let gathering = await withDeadline(seconds: 20) {
                (try? await clock.waitForSleepers(2, dueWithin: 2 * interval)) != nil
            }
            try #require(gathering == true, "the loops claimed as soon as they were woken")
            #expect(world.receiver.received.isEmpty)
            // One interval on, one claim: it takes all three (the next claim is another interval away).
            clock.advance(by: interval)
            try await eventually("the three webhooks arrived", within: 30) { world.receiver.received.count == 3 }
            #expect(Set(world.receiver.received.compactMap { $0.json["visitId"]?.stringValue }) == ["v-1", "v-2", "v-3"])
        }
    }

    /// Sealed personal fields go out opened (the database keeps them sealed); after the customer's erasure
    /// they read null.
    @Test func personalFieldsAreOpenedAtSendTimeAndNullAfterErasure() async throws {
        try await withWebhookWorld { world in
            let keys = world.keys
            let sealed = try await world.pool.withConnection { c in
                try keys.seal("Olga", with: try keys.dataKey(forCustomer: "c-9", on: c))
            }
            try await world.append("v-9", version: 1, type: "scheduled", data: #"{"customerFirstName":"\#(sealed)"}"#)
            try await eventually("the webhook arrived", within: 30) { world.receiver.received.count >= 1 }
            #expect(world.receiver.received[0].json["data"]?["data"]?["customerFirstName"]?.stringValue == "Olga")
            let stored = try await world.pool.query("SELECT count(*) AS n FROM webhooks WHERE data LIKE '%Olga%'")
            #expect(stored.first?["n"] == "0")
            _ = try await world.pool.withTransaction { try PersonalDataKeys.destroy(customerId: "c-9", on: $0) }
            try await world.append("v-9", version: 2, type: "enRoute")
            try await eventually("the second arrived", within: 30) { world.receiver.received.count >= 2 }
            // The first event's body read anew (an operator's retry) carries null now.
            let first = try #require(try await world.webhookRows().first)
            try await eventually("sent") { try await world.webhookRows().first?.state == .sent }
            _ = try await world.pool.query("UPDATE webhooks SET state = 'dead' WHERE id = \(first.id)")
            try await world.store.retry(id: first.id)
            world.worker.wakeUp.signal()
            try await eventually("the retry arrived", within: 30) { world.receiver.received.count >= 3 }
            let again = world.receiver.received[2]
            #expect(again.id == first.webhookId)
            #expect(again.json["data"]?["data"]?["customerFirstName"]?.isNull == true)
        }
    }

    /// Switched off (no configuration), nothing is written; deliveries reaching a final state and activity
    /// state changes are reported when on, and webhook rows report nothing themselves.
    @Test func whatIsWrittenAndWhenNot() async throws {
        try await withTestDatabase { _, pool in
            let store = WebhookStore(pool: pool)
            _ = try await pool.query(
                "INSERT INTO events (stream_name, position, type, data) VALUES ('visit-a', 1, 'scheduled', '{}')")
            #expect(try await store.list().isEmpty)
            try await store.setEnabled(true)
            _ = try await pool.query(
                "INSERT INTO events (stream_name, position, type, data) VALUES ('visit-a', 2, 'enRoute', '{}')")
            _ = try await pool.query(
                """
                INSERT INTO live_activities (visit_id, activity_id, device_id, push_token, environment, registered_at_ms)
                VALUES ('a', 'act-1', 'dev-1', 'tok', 'sandbox', 1)
                """)
            _ = try await pool.query("UPDATE live_activities SET reported_state = 'stale' WHERE activity_id = 'act-1'")
            _ = try await pool.query("UPDATE live_activities SET reported_state = 'stale' WHERE activity_id = 'act-1'")
            _ = try await pool.query(
                "UPDATE live_activities SET retired_at_ms = 2, retired_reason = 'dismissed' WHERE activity_id = 'act-1'")
            _ = try await pool.query(
                """
                INSERT INTO deliveries (apns_id, target, visit_id, customer_id, activity_id, kind, priority, aps_timestamp,
                                        body, visit_version, event_recorded_at, created_at, next_attempt_at)
                VALUES (gen_random_uuid(), 'activity:a/act-1', 'a', 'c-1', 'act-1', 'update', 5, 1, '{}', 2, 0, 0, 0),
                       (gen_random_uuid(), 'activity:a/act-1', 'a', 'c-1', 'act-1', 'update', 5, 2, '{}', 2, 0, 0, 0)
                """)
            _ = try await pool.query("UPDATE deliveries SET state = 'sending'")
            // As the outbox completes a push: a reported outcome is stamped with its transaction.
            _ = try await pool.query(
                """
                UPDATE deliveries SET state = 'sent', finished_at = 5, last_status = 200, finished_xid = pg_current_xact_id()
                WHERE aps_timestamp = 1
                """)
            _ = try await pool.query("UPDATE deliveries SET state = 'superseded' WHERE aps_timestamp = 2")
            try await collect(store, count: 1, limit: 100)
            let rows = try await store.list().reversed()
            #expect(
                rows.map(\.type) == [
                    "visit.event", "liveActivity.active", "liveActivity.stale", "liveActivity.dismissed", "delivery.sent",
                ])
            #expect(rows.allSatisfy { $0.visitId == "a" && $0.state == .pending })
            let sent = try await pool.query("SELECT data FROM webhooks WHERE type = 'delivery.sent'")
            let data = try JSONValue.parse(sent.first?["data"] ?? "")
            #expect(data["lastStatus"]?.integerValue == 200 && data["kind"]?.stringValue == "update")
            // The outbox's ids and the webhooks' are one numbering.
            let ids = try await pool.query("SELECT id FROM deliveries UNION ALL SELECT id FROM webhooks")
            #expect(Set(ids.rows.map { $0["id"] }).count == ids.rows.count)
            try await store.setEnabled(false)
            _ = try await pool.query(
                "INSERT INTO events (stream_name, position, type, data) VALUES ('visit-a', 3, 'onSite', '{}')")
            #expect(try await store.list().count == 5)
        }
    }

    /// Finished deliveries are read by their transaction, never past one still running: a delivery finished by a
    /// transaction that commits after a later one is reported all the same, and each delivery once, in the order
    /// of the transactions.
    @Test func deliveryOutcomesAreCollectedOnceAndNeverPastARunningTransaction() async throws {
        try await withTestDatabase { url, pool in
            let store = WebhookStore(pool: pool)
            try await store.setEnabled(true)
            _ = try await pool.query(
                """
                INSERT INTO deliveries (apns_id, target, visit_id, customer_id, activity_id, kind, priority, aps_timestamp,
                                        body, visit_version, event_recorded_at, created_at, next_attempt_at, state)
                SELECT gen_random_uuid(), 'activity:a/act-' || n, 'a', 'c-1', 'act-' || n, 'update', 5, n, '{}', 2, 0, 0, 0,
                       'sending'
                FROM generate_series(1, 3) AS n
                """)
            func finish(_ timestamp: Int, _ state: String) -> PostgresQuery {
                """
                UPDATE deliveries SET state = \(state), finished_at = 5, finished_xid = pg_current_xact_id()
                WHERE aps_timestamp = \(timestamp)
                """
            }
            // A session lock the slow transaction waits for, held by a connection of its own.
            try await PostgresPool.withPool(PostgresConfiguration(url: url, size: 1)) { holder in
                try await PostgresPool.withPool(PostgresConfiguration(url: url, size: 1)) { slow in
                    _ = try await holder.query("SELECT pg_advisory_lock(4242)")
                    let first = finish(1, "sent")
                    let running = Task {
                        try await slow.withTransaction { c in
                            try c.query(first)
                            try c.query("SELECT pg_advisory_xact_lock(4242)")
                        }
                    }
                    try await eventually("the first transaction waits, its delivery stamped", within: 30) {
                        try await pool.query("SELECT count(*) AS n FROM pg_locks WHERE locktype = 'advisory' AND NOT granted")
                            .first?["n"] == "1"
                    }
                    _ = try await pool.query(finish(2, "dead"))
                    #expect(try await store.collectDeliveryOutcomes(limit: 100) == 0)
                    _ = try await holder.query("SELECT pg_advisory_unlock(4242)")
                    try await running.value
                }
            }
            _ = try await pool.query(finish(3, "expired"))
            try await collect(store, count: 3, limit: 2)
            let rows = try await store.list().reversed()
            #expect(rows.map(\.type) == ["delivery.sent", "delivery.dead", "delivery.expired"])
            // Switched off and on again, what finished meanwhile is not reported.
            try await store.setEnabled(false)
            _ = try await pool.query("UPDATE deliveries SET finished_xid = pg_current_xact_id() WHERE aps_timestamp = 3")
            #expect(try await store.collectDeliveryOutcomes(limit: 100) == 0)
            try await store.setEnabled(true)
            #expect(try await store.collectDeliveryOutcomes(limit: 100) == 0)
        }
    }

    /// A push the outbox worker delivers is reported by the webhook worker as `delivery.sent`, after the event
    /// that caused it, without anything written for it in the push's transaction but the stamp.
    @Test func aDeliveredPushIsReportedAfterItsEvent() async throws {
        try await withWebhookWorld { world in
            try await world.append("v-1", version: 1, type: "scheduled")
            try await Self.deliveringOneUpdate(world) { _ in
                try await eventually("the push's outcome arrived", within: 30) {
                    world.receiver.received.contains { $0.json["type"]?.stringValue == "delivery.sent" }
                }
            }
            let received = world.receiver.received.filter { $0.visitId == "v-1" }
            let types = received.compactMap { $0.json["type"]?.stringValue }
            #expect(types.first == "visit.event")
            #expect(types.filter { $0 == "delivery.sent" }.count == 1)
            let sent = try #require(received.first { $0.json["type"]?.stringValue == "delivery.sent" })
            #expect(sent.json["data"]?["kind"]?.stringValue == "update")
            #expect(sent.json["data"]?["activityId"]?.stringValue == "act-1")
            #expect(WebhookReceiver.verify(sent, secret: WebhookWorld.secret))
        }
    }

    /// A receiver that never answers holds up no push: the outbox worker delivers while the webhook hangs.
    @Test func aHangingReceiverDoesNotHoldUpPushes() async throws {
        try await withWebhookWorld(answer: { _, _ in .hang }) { world in
            try await world.append("v-1", version: 1, type: "scheduled")
            try await eventually("the receiver holds a POST", within: 30) { world.receiver.received.count >= 1 }
            try await Self.deliveringOneUpdate(world) { sender in
                try await eventually("the push was sent while the webhook hangs", within: 30) { sender.calls.count >= 1 }
                #expect(try await world.webhookRows().first?.state != .sent)
            }
        }
    }

    /// An outbox worker delivering one update to v-1's activity `act-1` (registered here) while `body` runs,
    /// stopped after it.
    static func deliveringOneUpdate(_ world: WebhookWorld, _ body: (RecordingSender) async throws -> Void)
        async throws
    {
        let configuration = OutboxFixture.fastConfiguration
        let outbox = Outbox(pool: world.pool, configuration: configuration)
        _ = try await world.pool.withConnection {
            try TokenRegistry().registerLiveActivity(
                visitId: "v-1", activityId: "act-1", pushToken: token("act-1"), environment: .sandbox, deviceId: nil,
                on: $0)
        }
        let sender = RecordingSender()
        let pushes = OutboxWorker(pool: world.pool, sender: sender, configuration: configuration, metrics: Metrics())
        let running = Task { try await pushes.run() }
        defer { running.cancel() }
        _ = try await world.pool.withTransaction {
            try outbox.enqueue([update("v-1", timestamp: Int64(Date().timeIntervalSince1970))], on: $0)
        }
        pushes.wake()
        do {
            try await body(sender)
        } catch {
            pushes.stop()
            _ = try? await running.value
            throw error
        }
        pushes.stop()
        _ = try? await running.value
    }

    /// While the pushes have a backlog, webhooks slow down to a trickle but still go, in order.
    @Test func webhooksYieldToAPushBacklogButKeepGoing() async throws {
        let backlog = Atomic<Bool>(true)
        try await withWebhookWorld(
            configure: {
                $0.yieldBatchSize = 1
                $0.yieldSeconds = 0.01
            }, pushesBacklogged: { backlog.load(ordering: .relaxed) }
        ) { world in
            for version in 1...3 { try await world.append("v-1", version: Int64(version), type: "progress") }
            try await eventually("all sent while yielding", within: 30) {
                try await world.webhookRows().allSatisfy { $0.state == .sent }
            }
            #expect(world.receiver.received.map { $0.json["data"]?["version"]?.integerValue } == [1, 2, 3])
        }
    }

    /// Retention removes finished webhooks older than the retention, never open ones.
    @Test func retentionRemovesOldFinishedWebhooks() async throws {
        try await withTestDatabase { _, pool in
            try await WebhookStore(pool: pool).setEnabled(true)
            for version in 1...3 {
                _ = try await pool.query(
                    "INSERT INTO events (stream_name, position, type, data) VALUES ('visit-a', \(version), 'x', '{}')")
            }
            _ = try await pool.query(
                "UPDATE webhooks SET state = 'sent', finished_at = 1000 WHERE id = (SELECT min(id) FROM webhooks)")
            _ = try await pool.query(
                "UPDATE webhooks SET state = 'dead', finished_at = \(Date().timeIntervalSince1970) WHERE id = (SELECT max(id) FROM webhooks)"
            )
            let report = try await Prune(pool: pool, settings: RetentionSettings(retentionDays: 30)).run()
            _ = report
            let left = try await WebhookStore(pool: pool).list().map(\.state)
            #expect(left.sorted { $0.rawValue < $1.rawValue } == [.dead, .pending])
        }
    }
}

/// Collects delivery outcomes until `count` were read, `limit` at a time, then checks that nothing is left. A
/// transaction running anywhere in the cluster (other tests' too) may hold collection back for a moment.
private func collect(_ store: WebhookStore, count: Int, limit: Int) async throws {
    var read = 0
    try await eventually("\(count) delivery outcomes collected", within: 30) {
        let n = try await store.collectDeliveryOutcomes(limit: limit)
        #expect(n <= limit)
        read += n
        return read >= count
    }
    #expect(read == count)
    #expect(try await store.collectDeliveryOutcomes(limit: limit) == 0)
}

/// The start-time checks of `LIVEVISITS_WEBHOOK_URL` and `LIVEVISITS_WEBHOOK_SECRET`.
@Suite struct WebhookConfigurationTests {
    @Test func bothOrNeitherAndOnlyHTTP() throws {
        #expect(try WebhookConfiguration.fromEnvironment([:]) == nil)
        let ok = try WebhookConfiguration.fromEnvironment([
            "LIVEVISITS_WEBHOOK_URL": "https://dispatch.example/hooks?x=1", "LIVEVISITS_WEBHOOK_SECRET": "s",
        ])
        #expect(ok?.url == "https://dispatch.example/hooks?x=1")
        #expect(
            try WebhookConfiguration.fromEnvironment([
                "LIVEVISITS_WEBHOOK_URL": "http://127.0.0.1:9/h", "LIVEVISITS_WEBHOOK_SECRET": "s",
            ]) != nil)
        let refused: [([String: String], String)] = [
            (["LIVEVISITS_WEBHOOK_URL": "ftp://x/h", "LIVEVISITS_WEBHOOK_SECRET": "s"], "LIVEVISITS_WEBHOOK_URL"),
            (["LIVEVISITS_WEBHOOK_URL": "http://", "LIVEVISITS_WEBHOOK_SECRET": "s"], "LIVEVISITS_WEBHOOK_URL"),
            (["LIVEVISITS_WEBHOOK_URL": "dispatch.example/h", "LIVEVISITS_WEBHOOK_SECRET": "s"], "LIVEVISITS_WEBHOOK_URL"),
            (["LIVEVISITS_WEBHOOK_URL": "http://a b/h", "LIVEVISITS_WEBHOOK_SECRET": "s"], "LIVEVISITS_WEBHOOK_URL"),
            (["LIVEVISITS_WEBHOOK_URL": "https://x/h"], "LIVEVISITS_WEBHOOK_SECRET is not set"),
            (["LIVEVISITS_WEBHOOK_SECRET": "s"], "LIVEVISITS_WEBHOOK_URL is not set"),
        ]
        for (environment, named) in refused {
            #expect(
                performing: { _ = try WebhookConfiguration.fromEnvironment(environment) },
                throws: { error in
                    (error as? WebhookConfigurationError)?.message.hasPrefix(named) == true
                })
        }
    }

    /// The signature as a receiver computes it: a known vector (`openssl dgst -sha256 -hmac`).
    @Test func theSignatureHeader() {
        let header = WebhookSignature.header(secret: "whsec", timestamp: 1_700_000_000, body: Array(#"{"a":1}"#.utf8))
        #expect(header == "t=1700000000,v1=\(Self.opensslVector)")
    }

    static let opensslVector = "8ad37ba156048ae0e0a5533c75cdf26fee88b07f93cb57ee4c80adb053012032"
}
