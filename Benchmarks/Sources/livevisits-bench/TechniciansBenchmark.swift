import APIStores
import EventStore
import Foundation
import HTTPAPI
import HTTPServer
import Outbox
import PersonalData
import Postgres
import Runtime
import VisitCommands
import VisitDomain
import VisitProjections

/// `livevisits-bench technicians`: the dispatch desk's day. Books `--visits` visits a day among
/// `--technicians` technicians over `--days` days through the real command path (a tenth of each day's
/// visits then reassigned), then reads `GET /v1/technicians?date=` of the middle day through the API's
/// handler, against the board's other read in the same run, `GET /v1/visits?limit=100`. It also times the
/// technicians read model's upsert beside the visits' on the same batches: what the write path pays for it.
struct TechniciansBenchmark {
    static let summary = "GET /v1/technicians for a day of 2,000 visits and 300 technicians, and its write cost (see --help)"

    static let syntax = CommandSyntax(
        command: "livevisits-bench technicians", summary: summary,
        options: [
            .value("--visits", "N", "visits a day (default 2000)"),
            .value("--technicians", "N", "technicians (default 300)"),
            .value("--days", "N", "days booked, the measured one in the middle (default 7)"),
            .value("--seconds", "N", "how long each read is repeated (default 5)"),
        ],
        details: "Needs LIVEVISITS_DATABASE_URL (a cluster to make a scratch database on).")

    var visits = 2_000
    var technicians = 300
    var days = 7
    var seconds = 5.0

    init(arguments: [String]) throws {
        let parsed = try Self.syntax.parse(arguments)
        visits = try parsed.integer("--visits", in: 1...1_000_000) ?? visits
        technicians = try parsed.integer("--technicians", in: 1...100_000) ?? technicians
        days = try parsed.integer("--days", in: 1...365) ?? days
        seconds = try parsed.positiveNumber("--seconds") ?? seconds
    }

    func run() async throws {
        let server = try BenchmarkEnvironment.serverURL()
        let root = URL(fileURLWithPath: FileManager.default.currentDirectoryPath)
        try await ScratchDatabase.with(serverURL: server, migrations: root.appendingPathComponent("Migrations")) { database in
            try await PostgresPool.withPool(PostgresConfiguration(url: database.url, size: 4)) { pool in
                let projections = root.appendingPathComponent("Projections")
                let readModel = try VisitReadModel(
                    projectionsDirectory: projections, rules: try ProjectionRules.load(directory: projections))
                let firstDay = (Int(Date().timeIntervalSince1970) / 86_400 - days / 2) * 86_400
                let handler = VisitCommandHandler(
                    store: EventStore(pool: pool), readModel: readModel, pushes: NoPushes(),
                    clock: ManualClock(now: Double(firstDay)))
                let t0 = Date()
                try await book(handler, pool: pool, firstDay: firstDay)
                try await database.settle()
                print(
                    String(
                        format: "technicians benchmark: %d visits a day, %d technicians, %d days booked in %.1f s",
                        visits, technicians, days, Date().timeIntervalSince(t0)))

                let measured = firstDay + (days / 2) * 86_400
                let date = ISO8601DateFormatter.string(
                    from: Date(timeIntervalSince1970: Double(measured)), timeZone: TimeZone(identifier: "UTC")!,
                    formatOptions: [.withFullDate, .withDashSeparatorInDate])
                let key = try await pool.withConnection {
                    try APIKeys.mint(role: .dispatcher, subject: nil, createdBy: nil, on: $0).key
                }
                let api = HandlerReads.handler(pool: pool, readModel: readModel)
                let headers: HTTPHeaders = ["Authorization": "Bearer \(key)"]
                let day = try await HandlerReads.measure(
                    api,
                    requests: [
                        HTTPRequest(
                            method: .get, rawPath: "/v1/technicians", queryItems: [HTTPQueryItem(name: "date", value: date)],
                            headers: headers)
                    ], callers: 1, seconds: seconds)
                let page = try await HandlerReads.measure(
                    api,
                    requests: [
                        HTTPRequest(
                            method: .get, rawPath: "/v1/visits", queryItems: [HTTPQueryItem(name: "limit", value: "100")],
                            headers: headers)
                    ], callers: 1, seconds: seconds)
                print(day.line("GET /v1/technicians?date=\(date)") + String(format: ", %d bytes", day.bytes))
                print(page.line("GET /v1/visits?limit=100 (reference)") + String(format: ", %d bytes", page.bytes))
                print(String(format: "  ratio: the day / a page of the list = %.2f (p50)", day.p50 / page.p50))

                let (visitsWrite, techniciansWrite) = try await writes(readModel, pool: pool, measured: measured)
                print(
                    String(
                        format:
                            "upserts of 32 visits' rows: visits %.3f ms, technicians %.3f ms (ratio %.2f): the share a batch's write adds",
                        visitsWrite * 1e3, techniciansWrite * 1e3, techniciansWrite / visitsWrite))
            }
        }
    }

    /// Books every day's visits in batches through `executeBatch`, then reassigns a tenth of them.
    func book(_ handler: VisitCommandHandler, pool: PostgresPool, firstDay: Int) async throws {
        let context = VisitCommandContext(actor: EventMetadata(actorRole: "dispatcher", actorSubject: "bench"))
        var commands: [VisitCommand] = []
        var reassignments: [VisitCommand] = []
        for day in 0..<days {
            for n in 0..<visits {
                let id = "v-\(day)-\(n)"
                let technician = n % technicians
                let start = firstDay + day * 86_400 + 6 * 3_600 + (n * 12 * 3_600) / visits
                let scheduled = VisitScheduled(
                    customerId: "c-\(n)",
                    attributes: ServiceVisitAttributes(
                        visitId: id, customerFirstName: "Alex", serviceAddress: "12 Elm Row", jobSummary: "Boiler check"),
                    technician: Technician(
                        id: "t-\(technician)", name: "Technician \(technician)", avatarSymbol: "person.crop.circle",
                        vanDescription: "Van \(technician)"),
                    arrivalWindow: ArrivalWindow(start: start, end: start + 3_600), kilometresAway: 14)
                commands.append(VisitCommand(visitId: id, event: .scheduled(scheduled), context: context, isCreation: true))
                if n % 10 == 0 {
                    let other = (technician + 1) % technicians
                    let event = VisitEvent.reassigned(
                        Technician(
                            id: "t-\(other)", name: "Technician \(other)", avatarSymbol: "person.fill",
                            vanDescription: "Van \(other), new"),
                        ArrivalUpdate())
                    reassignments.append(VisitCommand(visitId: id, event: event, context: context, isCreation: false))
                }
            }
        }
        for list in [commands, reassignments] { try await handler.executeInBatches(list, pool: pool) }
    }

    /// Median seconds of the visits' upsert and of the technicians' for the same 32 states (the measured day's
    /// first visits, written again at their own version), alternated so both see the same load.
    func writes(_ readModel: VisitReadModel, pool: PostgresPool, measured: Int) async throws -> (Double, Double) {
        try await pool.withConnection { c in
            let ids = (0..<32).map { "v-\(days / 2)-\($0)" }
            let states = try ids.map { id in
                try VisitReadModel.state(visitId: id, on: c)
                    ?? { throw BenchmarkUsageError(message: "visit \(id) was not booked") }()
            }
            let encoded = readModel.encode(states)
            let both = readModel.upsertStatements(encoded)
            var visits: [Double] = []
            var technicians: [Double] = []
            let started = Date()
            while Date().timeIntervalSince(started) < seconds {
                for (i, statement) in both.enumerated() {
                    let t0 = Date()
                    try c.query(statement)
                    let elapsed = Date().timeIntervalSince(t0)
                    if i == 0 { visits.append(elapsed) } else { technicians.append(elapsed) }
                }
            }
            return (visits.sorted()[visits.count / 2], technicians.sorted()[technicians.count / 2])
        }
    }
}
