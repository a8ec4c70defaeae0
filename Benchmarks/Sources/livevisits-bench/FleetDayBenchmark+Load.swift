import APNsSimulator
import Foundation
import Postgres
import Synchronization

/// The routes `fleet-day` measures, as it prints them.
enum FleetRoute: String, CaseIterable, Sendable {
    case location = "POST /v1/technicians/{id}/location"
    case book = "POST /v1/visits"
    case event = "POST /v1/visits/{id}/events"
    case registerActivity = "PUT /v1/visits/{id}/live-activities/{aid}"
    case reportState = "PUT …/live-activities/{aid}/state"
    case customerToken = "PUT /v1/customers/{id}/… tokens"
    case board = "GET /v1/visits (console board)"
    case technicianDay = "GET /v1/visits?technicianId= (console)"
    case timeline = "GET /v1/technicians?date= (console)"
    case ops = "GET /v1/ops/outbox… (console ops)"
}

/// One request of the fleet: a model action of technician `t`'s visit of cycle `k`, or a customer token.
struct FleetRequest: Sendable {
    enum Kind: Sendable {
        case action(FleetModel.Action)
        case pushToStartToken
        case notificationToken
    }

    let kind: Kind
    let technician: Int
    let cycle: Int

    init(action: FleetModel.Action, technician: Int, cycle: Int) {
        self.init(kind: .action(action), technician: technician, cycle: cycle)
    }

    init(kind: Kind, technician: Int, cycle: Int) {
        self.kind = kind
        self.technician = technician
        self.cycle = cycle
    }

    static func pushToStartToken(_ t: Int) -> FleetRequest { FleetRequest(kind: .pushToStartToken, technician: t, cycle: 0) }
    static func notificationToken(_ t: Int) -> FleetRequest { FleetRequest(kind: .notificationToken, technician: t, cycle: 0) }

    var route: FleetRoute {
        switch kind {
        case .pushToStartToken, .notificationToken: .customerToken
        case .action(.book): .book
        case .action(.registerActivity): .registerActivity
        case .action(.reportState): .reportState
        case .action(.fix): .location
        case .action(.status), .action(.cancel), .action(.caughtUp): .event
        }
    }

    /// The visit whose version a 201 answer carries (bookings and events).
    var answersVersionOf: String? {
        route == .book || route == .event ? FleetModel.visitId(technician, cycle) : nil
    }

    /// A 64-hex-digit token: `kind` (1 activity, 2 push-to-start, 3 notifications), technician, cycle.
    static func token(_ kind: Int, _ t: Int, _ k: Int) -> String {
        let hex = String(kind, radix: 16) + "f" + String(t, radix: 16) + "f" + String(k, radix: 16) + "f"
        return hex + String(repeating: "0", count: 64 - hex.count)
    }

    func bytes(keys: FleetKeys, now: Double) -> [UInt8] {
        let t = technician
        let visit = FleetModel.visitId(t, cycle)
        let technicianKey = keys.technicians[t]
        let customerKey = keys.customers[t]
        switch kind {
        case .pushToStartToken:
            return LoadConnection.request(
                "PUT", "/v1/customers/c-\(t)/push-to-start-tokens/d-\(t)", key: customerKey,
                body: #"{"pushToken":"\#(Self.token(2, t, 0))","environment":"sandbox"}"#)
        case .notificationToken:
            return LoadConnection.request(
                "PUT", "/v1/customers/c-\(t)/devices/d-\(t)/notification-token", key: customerKey,
                body: #"{"pushToken":"\#(Self.token(3, t, 0))","environment":"sandbox"}"#)
        case .action(.book):
            let start = Int(now) + 1_800
            let home = LocationBenchmark.home
            return LoadConnection.request(
                "POST", "/v1/visits", key: keys.dispatcher,
                body: """
                    {"visitId":"\(visit)","customerId":"c-\(t)","attributes":{"customerFirstName":"Alex",\
                    "serviceAddress":"12 Elm Row","jobSummary":"Boiler check"},"technician":{"id":"t-\(t)",\
                    "name":"Technician \(t)","avatarSymbol":"person.crop.circle","vanDescription":"White van"},\
                    "arrivalWindow":{"start":\(start),"end":\(start + 1_800)},"kilometresAway":\(FleetModel.startKilometres),\
                    "location":{"latitude":\(home.latitude),"longitude":\(home.longitude)}}
                    """)
        case .action(.registerActivity):
            return LoadConnection.request(
                "PUT", "/v1/visits/\(visit)/live-activities/\(FleetModel.activityId(cycle))", key: customerKey,
                body: #"{"pushToken":"\#(Self.token(1, t, cycle))","environment":"sandbox","version":1,"deviceId":"d-\#(t)"}"#)
        case .action(.reportState(let state)):
            return LoadConnection.request(
                "PUT", "/v1/visits/\(visit)/live-activities/\(FleetModel.activityId(cycle))/state", key: customerKey,
                body: #"{"state":"\#(state)"}"#)
        case .action(.status(let type)):
            return LoadConnection.request(
                "POST", "/v1/visits/\(visit)/events", key: technicianKey, body: #"{"type":"\#(type)"}"#)
        case .action(.cancel):
            return LoadConnection.request(
                "POST", "/v1/visits/\(visit)/events", key: keys.dispatcher,
                body: #"{"type":"cancelled","reason":"Customer rescheduled"}"#)
        case .action(.caughtUp(let kilometres)):
            let shown = (kilometres * 10).rounded() / 10
            return LoadConnection.request(
                "POST", "/v1/visits/\(visit)/events", key: keys.dispatcher,
                body: #"{"type":"\#(shown <= 1.0 ? "nearby" : "progress")","kilometresAway":\#(shown)}"#)
        case .action(.fix(let kilometres)):
            let point = LocationBenchmark.north(kilometres)
            return LoadConnection.request(
                "POST", "/v1/technicians/t-\(t)/location", key: technicianKey,
                body: #"{"latitude":\#(point.latitude),"longitude":\#(point.longitude),"accuracyMetres":8,"recordedAt":\#(now)}"#)
        }
    }
}

/// What one route's answers were in a step.
struct RouteFigures {
    var latencies: [Double] = []
    var failed = 0
    var firstFailure: String?
    var count: Int { latencies.count }

    mutating func add(_ seconds: Double, status: Int, body: [UInt8]) {
        latencies.append(seconds)
        guard status / 100 != 2 else { return }
        failed += 1
        if firstFailure == nil { firstFailure = "\(status) " + String(decoding: body.prefix(160), as: UTF8.self) }
    }

    mutating func merge(_ other: RouteFigures) {
        latencies += other.latencies
        failed += other.failed
        firstFailure = firstFailure ?? other.firstFailure
    }
}

/// One keep-alive connection of the fleet (open loop): its technicians' requests, each sent at its due time,
/// or at once when the connection is behind (the lag is noted).
final class FleetLane: LoadClient {
    struct Item: Sendable {
        let due: Double
        let request: FleetRequest
    }

    private let items: [Item]
    private let keys: FleetKeys
    private var position = 0
    private var current: (route: FleetRoute, sent: Double, visit: String?)?
    private(set) var figures: [FleetRoute: RouteFigures] = [:]
    private(set) var lags: [Double] = []
    /// The highest version a 201 answer gave per visit.
    private(set) var versions: [String: Int] = [:]
    /// Bookings and events answered 201.
    private(set) var accepted = 0

    init(items: [Item], keys: FleetKeys) {
        self.items = items
        self.keys = keys
        lags.reserveCapacity(items.count)
    }

    var dueAt: Double? { position < items.count ? items[position].due : nil }

    func next() -> [UInt8]? {
        guard position < items.count else { return nil }
        let item = items[position]
        position += 1
        let now = LoadConnection.now()
        lags.append(max(0, now - item.due))
        current = (item.request.route, now, item.request.answersVersionOf)
        return item.request.bytes(keys: keys, now: now)
    }

    func answered(status: Int, body: [UInt8]) {
        guard let (route, sent, visit) = current else { return }
        figures[route, default: RouteFigures()].add(LoadConnection.now() - sent, status: status, body: body)
        if status == 201, let visit, let version = Self.version(body) {
            accepted += 1
            versions[visit] = max(versions[visit] ?? 0, version)
        }
    }

    /// The number after the first `"version":` of a visit's JSON.
    static func version(_ body: [UInt8]) -> Int? {
        let key = Array(#""version":"#.utf8)
        guard body.count > key.count else { return nil }
        for i in 0...(body.count - key.count) where body[i] == key[0] && Array(body[i..<(i + key.count)]) == key {
            var j = i + key.count
            var value = 0
            while j < body.count, body[j] >= UInt8(ascii: "0"), body[j] <= UInt8(ascii: "9") {
                value = value * 10 + Int(body[j] - UInt8(ascii: "0"))
                j += 1
            }
            return j > i + key.count ? value : nil
        }
        return nil
    }
}

/// One open console page polling at a fixed rate, as the console's scripts do: each poll's reads one after
/// another, the next poll `every` seconds after this one began (never sooner), the first at a random point of
/// the first period.
final class ConsolePage: LoadClient {
    /// What the page shows: of every 20 pages, 15 boards, 2 technicians' days, 1 board with the timeline, 2 ops.
    enum Kind {
        case board, technicianDay, timeline, ops

        /// The `index`th page's kind; without `timeline`, its pages show the board alone.
        static func of(index: Int, timeline: Bool = true) -> Kind {
            switch index % 20 {
            case 0..<15: .board
            case 15, 16: .technicianDay
            case 17: timeline ? .timeline : .board
            default: .ops
            }
        }
    }

    private let reads: [(FleetRoute, [UInt8])]
    private let every: Double
    private let until: Double
    private var nextPoll: Double
    private var queue: ArraySlice<(FleetRoute, [UInt8])> = []
    private var current: (route: FleetRoute, sent: Double)?
    private(set) var figures: [FleetRoute: RouteFigures] = [:]

    init(kind: Kind, index: Int, keys: FleetKeys, date: String, every: Double, from: Double, until: Double) {
        let technician = index % max(keys.technicians.count, 1)
        func get(_ path: String, _ key: String) -> [UInt8] { LoadConnection.request("GET", path, key: key, body: nil) }
        switch kind {
        case .board: reads = [(.board, get("/v1/visits?limit=100", keys.dispatcher))]
        case .technicianDay:
            reads = [(.technicianDay, get("/v1/visits?technicianId=t-\(technician)&limit=100", keys.dispatcher))]
        case .timeline:
            reads = [
                (.board, get("/v1/visits?limit=100", keys.dispatcher)),
                (.timeline, get("/v1/technicians?date=\(date)", keys.dispatcher)),
            ]
        case .ops:
            reads = [
                (.ops, get("/v1/ops/outbox?state=dead&limit=100", keys.ops)), (.ops, get("/v1/ops/outbox/pause", keys.ops)),
            ]
        }
        self.every = every
        self.until = until
        nextPoll = from + Double.random(in: 0..<every)
    }

    var dueAt: Double? { queue.isEmpty ? nextPoll : nil }

    func next() -> [UInt8]? {
        let now = LoadConnection.now()
        if queue.isEmpty {
            guard now < until else { return nil }
            queue = reads[...]
            nextPoll = now + every
        }
        let (route, request) = queue.removeFirst()
        current = (route, now)
        return request
    }

    func answered(status: Int, body: [UInt8]) {
        guard let (route, sent) = current else { return }
        figures[route, default: RouteFigures()].add(LoadConnection.now() - sent, status: status, body: body)
    }
}

/// Percentiles of sorted samples, one way for every benchmark: the value below which a share `p` falls.
enum Percentile {
    static func of(_ sorted: [Double], _ p: Double) -> Double {
        sorted.isEmpty ? .nan : sorted[min(sorted.count - 1, Int(Double(sorted.count) * p))]
    }
}

/// The simulator's acknowledgements (200) by `apns-id`.
final class FleetSink: Sendable {
    private let acks = Mutex([String: Int]())

    func note(_ delivery: SimulatedDelivery) {
        guard delivery.status == 200 else { return }
        let id = delivery.apnsID.lowercased()
        acks.withLock { $0[id, default: 0] += 1 }
    }

    func count(_ apnsID: String) -> Int { acks.withLock { $0[apnsID.lowercased()] ?? 0 } }
}

/// The webhooks the receiver got, by their body's `id`.
final class WebhookTally: Sendable {
    private let received = Mutex([String: Int]())

    func note(_ body: Data) {
        let bytes = [UInt8](body)
        let key = Array(#""id":""#.utf8)
        guard bytes.count > key.count,
            let start = (0...(bytes.count - key.count)).first(where: { Array(bytes[$0..<($0 + key.count)]) == key })
        else { return }
        let from = start + key.count
        guard let end = bytes[from...].firstIndex(of: UInt8(ascii: "\"")) else { return }
        let id = String(decoding: bytes[from..<end], as: UTF8.self)
        received.withLock { $0[id, default: 0] += 1 }
    }

    func count(_ id: String) -> Int { received.withLock { $0[id] ?? 0 } }
}

/// Where the tables stood when a step began: what came after is the step's.
struct StepMarks {
    var delivery = 0
    var webhook = 0
    var event = 0

    static func read(_ database: ScratchDatabase) async throws -> StepMarks {
        StepMarks(
            delivery: try await database.integer("SELECT coalesce(max(id), 0) AS n FROM deliveries"),
            webhook: try await database.integer("SELECT coalesce(max(id), 0) AS n FROM webhooks"),
            event: try await database.integer("SELECT coalesce(max(global_position), 0) AS n FROM events"))
    }
}

/// The step's checks: nothing lost, nothing sent twice. `lines` to print, `problems` for the verdict.
struct FleetChecks {
    var lines: [String] = []
    var problems: [String] = []

    static func run(
        database: ScratchDatabase, marks: StepMarks, lanes: [FleetLane], sink: FleetSink, hooks: WebhookTally
    ) async throws -> FleetChecks {
        var checks = FleetChecks()
        try await PostgresPool.withPool(PostgresConfiguration(url: database.url, size: 1)) { pool in
            // Events: every version answered 201 is in its stream.
            var answered: [String: Int] = [:]
            for lane in lanes { answered.merge(lane.versions, uniquingKeysWith: max) }
            let accepted = lanes.reduce(0) { $0 + $1.accepted }
            var stored: [String: Int] = [:]
            for row in try await pool.query(
                "SELECT substr(stream_name, 7) AS visit, max(position) AS n FROM events WHERE stream_name LIKE 'visit-fd-%' GROUP BY stream_name"
            ) {
                stored[try row.string("visit")] = try row.int("n")
            }
            let missing = answered.filter { (stored[$0.key] ?? 0) < $0.value }.count
            let appended =
                try await pool.query(
                    "SELECT count(*) AS n FROM events WHERE global_position > \(marks.event)"
                ).first?.int("n") ?? 0
            checks.lines.append(
                "events: \(accepted) bookings and events answered 201, \(appended) appended in all (\(appended - accepted) by "
                    + "the location rules); visits whose answered version is not in the store: \(missing)")
            if missing > 0 { checks.problems.append("\(missing) visits lost an answered event") }

            // Pushes: every delivery owed was acknowledged exactly once.
            var states: [String: Int] = [:]
            var kinds: [String: Int] = [:]
            var lost = 0
            var unacknowledged = 0
            var twice = 0
            for row in try await pool.query(
                "SELECT apns_id::text AS apns_id, kind, state FROM deliveries WHERE id > \(marks.delivery)"
            ) {
                let state = try row.string("state")
                states[state, default: 0] += 1
                guard !["superseded", "expired", "cancelled"].contains(state) else { continue }
                guard state == "sent" else {
                    lost += 1
                    continue
                }
                kinds[try row.string("kind"), default: 0] += 1
                switch sink.count(try row.string("apns_id")) {
                case 0: unacknowledged += 1
                case 1: break
                default: twice += 1
                }
            }
            checks.lines.append(
                "pushes: deliveries by state "
                    + states.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", ")
                    + "; sent by kind " + kinds.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", ")
                    + "; owed but not sent \(lost), sent but not acknowledged \(unacknowledged), acknowledged twice or more \(twice)"
            )
            if lost + unacknowledged > 0 { checks.problems.append("\(lost + unacknowledged) pushes lost") }
            if twice > 0 { checks.problems.append("\(twice) pushes acknowledged twice") }

            // Webhooks: every one written reached the receiver, duplicates only by id.
            var written = 0
            var notSent = 0
            var notReceived = 0
            var duplicates = 0
            for row in try await pool.query(
                "SELECT webhook_id::text AS webhook_id, state FROM webhooks WHERE id > \(marks.webhook)"
            ) {
                written += 1
                if try row.string("state") != "sent" { notSent += 1 }
                let received = hooks.count(try row.string("webhook_id"))
                if received == 0 { notReceived += 1 }
                duplicates += max(0, received - 1)
            }
            checks.lines.append(
                "webhooks: \(written) written; not sent \(notSent), never received \(notReceived), received again (same id) \(duplicates)"
            )
            if notSent + notReceived > 0 { checks.problems.append("\(notSent + notReceived) webhooks lost") }
        }
        return checks
    }
}
