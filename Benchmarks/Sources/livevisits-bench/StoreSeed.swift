import Foundation
import PersonalData
import Postgres
import VisitDomain
import VisitProjections

/// A year of a fleet's visits, loaded into a migrated database as the product would have written them:
/// the events by COPY (each decided and folded by `VisitDecider`, the personal fields sealed under their
/// customer's data key as the command path seals them), the read models by the product's own replay
/// (`VisitReplay`, what `livevisits replay` runs), then in SQL over what is loaded: Live Activities (sealed
/// tokens with their look-up hashes) for one visit in five of the last month, push-to-start tokens for one
/// customer in five, and the pushes of those activities (sent, dead, expired) as the outbox keeps them.
struct StoreSeed {
    var events: Int
    var visits: Int
    /// The epoch second the year ends at: the newest visits are today's, some not finished yet.
    var now: Int
    var customers: Int { max(1, visits / 25) }
    var technicians: Int { max(1, visits / 500) }
    /// Visits written per COPY (one transaction each).
    var chunk = 5_000

    struct Report {
        var events = 0
        var visits = 0
        var customers = 0
        var activities = 0
        var deliveries = 0
        var pushToStart = 0
        var keysSeconds = 0.0, eventsSeconds = 0.0, readModelSeconds = 0.0, outboxSeconds = 0.0
        var replays: [VisitReplay.Report] = []
        var seconds: Double { keysSeconds + eventsSeconds + readModelSeconds + outboxSeconds }
    }

    static func visitId(_ i: Int) -> String { "s\(i)" }
    func customerId(_ i: Int) -> String { "c\(i % customers)" }
    func technicianId(_ i: Int) -> String { "t\(i % technicians)" }
    static let firstNames = ["Alex", "Sam", "Robin", "Kim", "Jo", "Maria", "Noah", "Lea", "Omar", "Ines"]
    static let jobs = ["Boiler check", "Broadband install", "Washing machine repair", "Meter reading", "Heat pump service"]

    /// Where visit `i` ends: 3 in 50 cancelled (after the technician set off), 2 in 50 failed on site, the
    /// rest completed. A visit whose later events lie after `now` stops at the last one before.
    enum Outcome: String { case completed, cancelled, failed }
    static func outcome(_ i: Int) -> Outcome {
        switch i % 50 {
        case 0, 17, 33: .cancelled
        case 8, 41: .failed
        default: .completed
        }
    }

    /// The visit's arrival window start: visit `i` of `visits` falls on day `i * 365 / visits` of the year
    /// that ends tomorrow, between 08:00 and 17:30 (tomorrow's visits are booked, not begun).
    func windowStart(_ i: Int) -> Int {
        let today = now - now % 86_400
        let day = i * 365 / visits
        return today - (363 - day) * 86_400 + 8 * 3_600 + (i % 20) * 1_800
    }

    /// Visit `i`'s events with the time each is recorded, in order, its personal fields sealed under `key`.
    func journey(_ i: Int, key: PersonalDataKeys.DataKey, sealer: PersonalDataKeys) throws -> [(VisitEvent, Int)] {
        let start = windowStart(i)
        let technician = Technician(
            id: technicianId(i), name: Self.firstNames[(i / 7) % Self.firstNames.count], avatarSymbol: "person.crop.circle",
            vanDescription: "White van \(i % technicians)")
        let scheduled = VisitScheduled(
            customerId: customerId(i),
            attributes: ServiceVisitAttributes(
                visitId: Self.visitId(i), customerFirstName: try sealer.seal(Self.firstName(i), with: key),
                serviceAddress: try sealer.seal("\(i % 200 + 1) Elm Row, Flat \(i % 9 + 1)", with: key),
                jobSummary: try sealer.seal(Self.jobs[i % Self.jobs.count], with: key)),
            technician: technician, arrivalWindow: ArrivalWindow(start: start, end: start + 3_600), kilometresAway: 18)
        // About events/visits events a visit: the five of a journey, the rest progress on the way.
        let progress = max(0, events / visits - 5)
        var out: [(VisitEvent, Int)] = [(.scheduled(scheduled), start - 86_400 - i % 3_600)]
        out.append((.enRoute(ArrivalUpdate(kilometresAway: 16)), start - 1_800))
        for k in 0..<progress {
            let km = 15.0 * Double(progress - k) / Double(progress + 1)
            out.append(
                (
                    .progress(ArrivalUpdate(kilometresAway: (km * 100).rounded() / 100)),
                    start - 1_800 + (k + 1) * 1_500 / (progress + 1)
                ))
        }
        switch Self.outcome(i) {
        case .cancelled:
            out.append((.cancelled(reason: try sealer.seal("Customer not at home", with: key)), start - 200))
        case .failed:
            out.append((.nearby(ArrivalUpdate(kilometresAway: 1.2)), start - 120))
            out.append((.onSite, start))
            out.append(
                (.failed(reason: try sealer.seal("Part missing", with: key, fallback: technician.vanDescription)), start + 1_200))
        case .completed:
            out.append((.nearby(ArrivalUpdate(kilometresAway: 1.2)), start - 120))
            out.append((.onSite, start))
            out.append((.completed, start + 3_600))
        }
        return out.filter { $0.1 <= now }
    }

    static func firstName(_ i: Int) -> String { firstNames[i % firstNames.count] }

    /// Loads the store into the empty migrated database of `pool`; `log` hears each stage's figures.
    func load(
        pool: PostgresPool, readModel: VisitReadModel, personalData: PersonalDataKeys, log: @escaping @Sendable (String) -> Void
    ) async throws -> Report {
        var report = Report()
        report.customers = customers

        // The customers' data keys, made as the command path makes them (wrapped under the key file).
        var t0 = Date()
        let customers = self.customers
        let keys = try await pool.withConnection { c -> [PersonalDataKeys.DataKey] in
            try c.execute(script: "BEGIN")
            let keys = try (0..<customers).map { try personalData.dataKey(forCustomer: "c\($0)", on: c) }
            try c.execute(script: "COMMIT")
            return keys
        }
        report.keysSeconds = Date().timeIntervalSince(t0)
        log(String(format: "  %d customers' data keys in %.1f s", customers, report.keysSeconds))

        // The events, decided and folded visit by visit, COPY'd a chunk of visits at a time: the next chunk is
        // made while the last one is written.
        t0 = Date()
        var from = 0
        var writing: Task<Int, any Error>?
        while from < visits {
            let (first, to) = (from, min(from + chunk, visits))
            let buffer = try eventRows(first..<to, keys: keys, personalData: personalData, rules: readModel.rules)
            if let writing { report.events += try await writing.value }
            writing = Task {
                try await pool.withConnection { c -> Int in
                    try c.copyIn("COPY events (stream_name, position, type, data, metadata, recorded_at) FROM STDIN") { send in
                        try buffer.rows.withUnsafeBytes { try send($0) }
                    }
                    return buffer.count
                }
            }
            from = to
            if from % (chunk * 20) == 0 {
                let seconds = Date().timeIntervalSince(t0)
                log(
                    String(
                        format: "  events: %d visits, %d events, %.0f events/s", from, report.events,
                        Double(report.events) / seconds))
            }
        }
        if let writing { report.events += try await writing.value }
        report.visits = visits
        report.eventsSeconds = Date().timeIntervalSince(t0)
        log(
            String(
                format: "  events: %d visits, %d events, %.0f events/s", visits, report.events,
                Double(report.events) / report.eventsSeconds))
        try await pool.withConnection { try $0.execute(script: "ANALYZE events") }

        // The read models, by the product's replay of the log just written.
        t0 = Date()
        for projection in VisitReplay.Projection.all {
            let replay = try await VisitReplay(pool: pool, readModel: readModel, projection: projection).run()
            report.replays.append(replay)
            log(
                String(
                    format: "  read model %@: %d visits from %d events in %.1f s = %.0f events/s", projection.name, replay.visits,
                    replay.events, replay.seconds, replay.eventsPerSecond))
        }
        report.readModelSeconds = Date().timeIntervalSince(t0)

        t0 = Date()
        let counts = try await loadDevicesAndOutbox(pool: pool, keys: keys, personalData: personalData)
        report.activities = counts.activities
        report.pushToStart = counts.pushToStart
        report.deliveries = counts.deliveries
        report.outboxSeconds = Date().timeIntervalSince(t0)
        log(
            String(
                format: "  %d live activities, %d push-to-start tokens, %d deliveries (a month) in %.1f s", counts.activities,
                counts.pushToStart, counts.deliveries, report.outboxSeconds))
        return report
    }

    /// The COPY text of the events of `range`'s visits (stream, position, type, data, metadata, recorded at),
    /// each decided and folded by `VisitDecider` as the command path does, and how many rows it holds.
    func eventRows(
        _ range: Range<Int>, keys: [PersonalDataKeys.DataKey], personalData: PersonalDataKeys, rules: ProjectionRules
    ) throws -> (rows: [UInt8], count: Int) {
        let metadata = #"{"actorRole":"dispatcher","actorSubject":"seed"}"#
        var buffer: [UInt8] = []
        buffer.reserveCapacity(range.count * (events / max(visits, 1) + 1) * 260)
        var count = 0
        for i in range {
            var state: VisitState? = nil
            let stream = "visit-" + Self.visitId(i)
            for (event, at) in try journey(i, key: keys[i % customers], sealer: personalData) {
                let accepted = try VisitDecider.accept(event, given: state, recordedAt: at, rules: rules)
                state = accepted.state
                PostgresCopyText.append(stream, to: &buffer)
                buffer.append(9)
                buffer.append(contentsOf: String(accepted.recorded.version).utf8)
                buffer.append(9)
                PostgresCopyText.append(accepted.recorded.event.eventType, to: &buffer)
                buffer.append(9)
                PostgresCopyText.append(String(decoding: accepted.recorded.event.storedData(), as: UTF8.self), to: &buffer)
                buffer.append(9)
                buffer.append(contentsOf: metadata.utf8)
                buffer.append(9)
                buffer.append(contentsOf: Self.timestamp(at).utf8)
                buffer.append(10)
                count += 1
            }
        }
        return (buffer, count)
    }

    /// The visit ids of the last 30 days that have a Live Activity: one in five.
    func followedVisits() -> [Int] {
        let since = now - 30 * 86_400
        return (0..<visits).filter { $0 % 5 == 1 && windowStart($0) >= since }
    }

    private func loadDevicesAndOutbox(
        pool: PostgresPool, keys: [PersonalDataKeys.DataKey], personalData: PersonalDataKeys
    ) async throws -> (activities: Int, pushToStart: Int, deliveries: Int) {
        let followed = followedVisits()
        let customers = self.customers
        let now = self.now
        return try await pool.withConnection { c in
            // Live Activities: the token sealed under the customer's key, with its look-up hash, as a
            // registration stores it; an ended visit's activity retired by its end.
            var buffer: [UInt8] = []
            for i in followed {
                let key = keys[i % customers]
                let token = String(format: "%064x", i &* 2_654_435_761)
                let began = Int64(windowStart(i) - 1_800) * 1_000
                let ended = Self.outcome(i) == .completed ? windowStart(i) + 3_600 : windowStart(i) + 1_200
                let fields: [String?] = [
                    Self.visitId(i), "a\(i)", "d\(i % customers)", try personalData.seal(token, with: key), "production",
                    String(began), ended <= now ? String(Int64(ended) * 1_000) : nil, ended <= now ? "ended" : nil, "app",
                    ended <= now ? nil : "active", key.lookupHash(token),
                ]
                for (n, field) in fields.enumerated() {
                    if n > 0 { buffer.append(9) }
                    if let field { PostgresCopyText.append(field, to: &buffer) } else { buffer.append(contentsOf: "\\N".utf8) }
                }
                buffer.append(10)
            }
            try c.copyIn(
                """
                COPY live_activities (visit_id, activity_id, device_id, push_token, environment, registered_at_ms,
                    retired_at_ms, retired_reason, origin, reported_state, token_hash) FROM STDIN
                """
            ) { send in try buffer.withUnsafeBytes { try send($0) } }

            buffer.removeAll(keepingCapacity: true)
            var pushToStart = 0
            for customer in stride(from: 0, to: customers, by: 5) {
                let key = keys[customer]
                let token = String(format: "%064x", (customer + 1) &* 40_503)
                for (n, field) in [
                    "c\(customer)", "d\(customer)", try personalData.seal(token, with: key), "production",
                    String(Int64(now - 200 * 86_400) * 1_000), key.lookupHash(token),
                ].enumerated() {
                    if n > 0 { buffer.append(9) }
                    PostgresCopyText.append(field, to: &buffer)
                }
                buffer.append(10)
                pushToStart += 1
            }
            try c.copyIn(
                "COPY push_to_start_tokens (customer_id, device_id, push_token, environment, registered_at_ms, token_hash) FROM STDIN"
            ) { send in try buffer.withUnsafeBytes { try send($0) } }

            // A month of pushes: one update per event of a followed visit after its first, an end with its
            // last; 94 % acknowledged, 3 % dead (their failed attempts kept), 3 % expired. Their bodies carry
            // the event's status.
            let deliveries =
                try c.query(
                    """
                    WITH followed AS (
                        SELECT la.visit_id, la.activity_id, la.device_id, v.customer_id
                        FROM live_activities la JOIN visits v USING (visit_id)
                    ), rows AS (
                        INSERT INTO deliveries (apns_id, target, visit_id, customer_id, activity_id, device_id, kind, priority,
                            aps_timestamp, body, visit_version, event_recorded_at, created_at, state, next_attempt_at, attempts,
                            last_status, last_reason, finished_at, sent_priority, last_attempt, last_attempted_at, last_latency_seconds)
                        SELECT gen_random_uuid(), 'activity' || json_build_array(f.visit_id, f.activity_id)::text, f.visit_id,
                               f.customer_id, f.activity_id, f.device_id,
                               CASE WHEN e.type IN ('completed', 'cancelled', 'failed') THEN 'end' ELSE 'update' END,
                               CASE WHEN e.type = 'progress' THEN 5 ELSE 10 END,
                               extract(epoch FROM e.recorded_at)::bigint,
                               json_build_object('aps', json_build_object(
                                   'timestamp', extract(epoch FROM e.recorded_at)::bigint,
                                   'event', CASE WHEN e.type IN ('completed', 'cancelled', 'failed') THEN 'end' ELSE 'update' END,
                                   'content-state', json_build_object('status', e.type, 'kilometresAway', e.data->'kilometresAway'),
                                   'stale-date', extract(epoch FROM e.recorded_at)::bigint + 900))::text,
                               e.position,
                               extract(epoch FROM e.recorded_at), extract(epoch FROM e.recorded_at),
                               s.state, extract(epoch FROM e.recorded_at), CASE s.state WHEN 'dead' THEN 3 ELSE 1 END,
                               CASE s.state WHEN 'sent' THEN 200 WHEN 'dead' THEN 400 END,
                               CASE s.state WHEN 'dead' THEN 'BadDeviceToken' WHEN 'expired' THEN 'stale before it could be sent' END,
                               extract(epoch FROM e.recorded_at) + 0.05,
                               CASE WHEN s.state = 'sent' THEN CASE WHEN e.type = 'progress' THEN 5 ELSE 10 END END,
                               CASE WHEN s.state <> 'expired' THEN CASE s.state WHEN 'dead' THEN 3 ELSE 1 END END,
                               CASE WHEN s.state <> 'expired' THEN extract(epoch FROM e.recorded_at) END,
                               CASE WHEN s.state <> 'expired' THEN 0.03 END
                        FROM followed f
                        JOIN events e ON e.stream_name = 'visit-' || f.visit_id AND e.position > 1
                        CROSS JOIN LATERAL (SELECT CASE WHEN e.global_position % 100 < 94 THEN 'sent'
                                                        WHEN e.global_position % 100 < 97 THEN 'dead' ELSE 'expired' END AS state) s
                        WHERE e.recorded_at <= to_timestamp(\(now))
                        ORDER BY e.recorded_at
                        RETURNING id, state, last_attempted_at
                    ), attempts AS (
                        INSERT INTO delivery_attempts (delivery_id, attempt, attempted_at, status, latency_seconds)
                        SELECT id, n, last_attempted_at - (3 - n) * 60, 503, 0.03 FROM rows, generate_series(1, 2) AS n
                        WHERE state = 'dead'
                        RETURNING 1
                    )
                    SELECT (SELECT count(*) FROM rows) AS n
                    """
                ).first?.int("n") ?? 0
            try c.execute(script: "VACUUM ANALYZE live_activities, push_to_start_tokens, deliveries, delivery_attempts")
            return (followed.count, pushToStart, deliveries)
        }
    }

    /// `epoch` as a timestamptz COPY field (UTC).
    static func timestamp(_ epoch: Int) -> String {
        // Days to civil date (Howard Hinnant's algorithm).
        let days = epoch >= 0 ? epoch / 86_400 : (epoch - 86_399) / 86_400
        let secondOfDay = epoch - days * 86_400
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let day = doy - (153 * mp + 2) / 5 + 1
        let month = mp < 10 ? mp + 3 : mp - 9
        let year = yoe + era * 400 + (month <= 2 ? 1 : 0)
        func two(_ n: Int) -> String { n < 10 ? "0\(n)" : "\(n)" }
        return
            "\(year)-\(two(month))-\(two(day)) \(two(secondOfDay / 3_600)):\(two(secondOfDay / 60 % 60)):\(two(secondOfDay % 60))+00"
    }
}
