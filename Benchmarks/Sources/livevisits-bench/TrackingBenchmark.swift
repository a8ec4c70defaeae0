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

/// `livevisits-bench tracking`: what an open tracking page costs. Books `--visits` visits through the real
/// command path with a tracking link each, then has `--callers` concurrent callers ask
/// `GET /track/<token>/state` of random links through the API's handler (the page asks every 1.5 s, so
/// 10,000 open pages are about 6,700 a second), against the same callers reading `GET /v1/visits/{id}` with
/// a key in the same run. It also prints the page's weight (HTML, script and style).
struct TrackingBenchmark {
    static let summary = "GET /track/<token>/state against GET /v1/visits/{id}, and the page's weight (see --help)"

    static let syntax = CommandSyntax(
        command: "livevisits-bench tracking", summary: summary,
        options: [
            .value("--visits", "N", "visits, each with a tracking link (default 10000)"),
            .value("--callers", "N", "concurrent callers (default 8)"),
            .value("--seconds", "N", "how long each read is repeated (default 5)"),
        ],
        details: "Needs LIVEVISITS_DATABASE_URL (a cluster to make a scratch database on).")

    var visits = 10_000
    var callers = 8
    var seconds = 5.0

    init(arguments: [String]) throws {
        let parsed = try Self.syntax.parse(arguments)
        visits = try parsed.integer("--visits", in: 1...1_000_000) ?? visits
        callers = try parsed.integer("--callers", in: 1...1_000) ?? callers
        seconds = try parsed.positiveNumber("--seconds") ?? seconds
    }

    func run() async throws {
        let server = try BenchmarkEnvironment.serverURL()
        let root = URL(fileURLWithPath: FileManager.default.currentDirectoryPath)
        try await ScratchDatabase.with(serverURL: server, migrations: root.appendingPathComponent("Migrations")) { database in
            try await PostgresPool.withPool(PostgresConfiguration(url: database.url, size: 8)) { pool in
                let projections = root.appendingPathComponent("Projections")
                let readModel = try VisitReadModel(
                    projectionsDirectory: projections, rules: try ProjectionRules.load(directory: projections))
                let now = Int(Date().timeIntervalSince1970)
                let handler = VisitCommandHandler(
                    store: EventStore(pool: pool), readModel: readModel, pushes: NoPushes(),
                    clock: ManualClock(now: Double(now)))
                let t0 = Date()
                let ids = try await book(handler, pool: pool, now: now)
                let links = TrackingLinks(pool: pool)
                var tokens: [String] = []
                for id in ids {
                    guard
                        case .created(let token) = try await links.create(visitId: id, now: Double(now), mayCreate: { _ in true })
                    else { throw BenchmarkUsageError(message: "no tracking link for \(id)") }
                    tokens.append(token)
                }
                try await database.settle()
                print(
                    String(
                        format: "tracking benchmark: %d visits with a link each, made in %.1f s; %d callers",
                        visits, Date().timeIntervalSince(t0), callers))

                let key = try await pool.withConnection {
                    try APIKeys.mint(role: .dispatcher, subject: nil, createdBy: nil, on: $0).key
                }
                let api = HandlerReads.handler(pool: pool, readModel: readModel)
                let page = await api(HTTPRequest(method: .get, rawPath: "/track/\(tokens[0])")).body.count
                let script = await api(HTTPRequest(method: .get, rawPath: "/tracking/track.js")).body.count
                let style = await api(HTTPRequest(method: .get, rawPath: "/tracking/track.css")).body.count
                let state = try await HandlerReads.measure(
                    api, requests: tokens.map { HTTPRequest(method: .get, rawPath: "/track/\($0)/state") }, callers: callers,
                    seconds: seconds)
                let headers: HTTPHeaders = ["Authorization": "Bearer \(key)"]
                let visit = try await HandlerReads.measure(
                    api, requests: ids.map { HTTPRequest(method: .get, rawPath: "/v1/visits/\($0)", headers: headers) },
                    callers: callers, seconds: seconds)
                print(state.line("GET /track/<token>/state"))
                print(visit.line("GET /v1/visits/{id} (reference)"))
                print(
                    String(
                        format: "  ratio: state / visit = %.2f (p50), %.2f (p99)", state.p50 / visit.p50, state.p99 / visit.p99))
                print(
                    String(
                        format: "  10,000 open pages ask %.0f/s: %.0f%% of what this process answered",
                        10_000 / 1.5, 10_000 / 1.5 / state.perSecond * 100))
                print("page weight: HTML \(page) + script \(script) + style \(style) = \(page + script + style) bytes")
            }
        }
    }

    /// Books the visits in batches through `executeBatch`; their ids.
    func book(_ handler: VisitCommandHandler, pool: PostgresPool, now: Int) async throws -> [String] {
        let context = VisitCommandContext(actor: EventMetadata(actorRole: "dispatcher", actorSubject: "bench"))
        let commands = (0..<visits).map { n in
            let id = "v-\(n)"
            let scheduled = VisitScheduled(
                customerId: "c-\(n)",
                attributes: ServiceVisitAttributes(
                    visitId: id, customerFirstName: "Alex", serviceAddress: "12 Elm Row", jobSummary: "Boiler check"),
                technician: Technician(
                    id: "t-\(n % 300)", name: "Technician \(n % 300)", avatarSymbol: "person.crop.circle",
                    vanDescription: "White van"),
                arrivalWindow: ArrivalWindow(start: now + 600, end: now + 2_400), kilometresAway: 14)
            return VisitCommand(visitId: id, event: .scheduled(scheduled), context: context, isCreation: true)
        }
        try await handler.executeInBatches(commands, pool: pool)
        return commands.map(\.visitId)
    }
}
