import APIStores
import EventStore
import Foundation
import HTTPAPI
import HTTPServer
import JSON
import Outbox
import PersonalData
import Postgres
import Runtime
import VisitCommands
import VisitDomain
import VisitProjections

/// `livevisits-bench tracking`: what open tracking pages cost.
///
/// Over HTTP (the default): a `livevisits serve` (with the APNs simulator in this process, as `pipeline` runs
/// it) serves `--pages` open tracking pages, each on a keep-alive loopback connection of its own asking
/// `GET /track/<token>/state` as the page's script does (`PagePoller`: `?after=<version>`, held by the server
/// until a change or its 25 s hold ends, asked again at once but never sooner than 1.5 s after the previous ask;
/// the pages opened at random moments over one hold; with `--conditional`, the page's earlier way: 1.5 s after
/// each answer with the version it has as `If-None-Match`), while
/// `pipeline`'s measured load (`--connections` clients posting events, each pushed to a Live Activity) runs
/// against the same server, and `--changes` events a second go to tracked visits (an `enRoute` each, from a client
/// of their own). The pipeline's load runs with and without the pages, alternated over `--rounds`: the state
/// answers given at once (p50/p99; target p99 < 20 ms), how late held requests were answered past
/// their hold, the time from an event's 201 to the page's answer showing it (the page's "within 2 seconds"), the
/// pipeline's events/s with the pages against without them (target: within 10 %), and the page's weight fetched
/// from the server (HTML + script + style; target under 30 KB). The pages and the pipeline's clients are this
/// process (two threads each).
///
/// In process (`--in-process`): books `--visits` visits through the real command path with a tracking link
/// each, then has `--callers` concurrent callers ask `GET /track/<token>/state` of random links through the
/// API's handler, against the same callers reading `GET /v1/visits/{id}` with a key in the same run.
struct TrackingBenchmark {
    static let summary =
        "open tracking pages polling GET /track/<token>/state over HTTP beside pipeline's load; the page's weight (see --help)"

    static let syntax = CommandSyntax(
        command: "livevisits-bench tracking", summary: summary,
        options: [
            .value("--pages", "N", "open tracking pages, one connection each (default 10000)"),
            .value("--connections", "N", "pipeline load clients (default 16)"),
            .value("--rounds", "N", "pipeline loads without and with the pages, alternated (default 2)"),
            .value("--seconds", "N", "seconds of each pipeline load, or of each read in process (default 10; 5 in process)"),
            .value("--changes", "N", "events a second posted to tracked visits beside the pages (default 10)"),
            .flag("--conditional", "pages ask with If-None-Match every 1.5 s (the page's earlier way), not held"),
            .flag("--in-process", "the handler alone in this process, no HTTP: state against GET /v1/visits/{id}"),
            .value("--visits", "N", "in process: visits, each with a tracking link (default 10000)"),
            .value("--callers", "N", "in process: concurrent callers (default 8)"),
        ],
        details:
            "Needs LIVEVISITS_DATABASE_URL (a cluster to make a scratch database on); over HTTP also openssl and a built livevisits next to this binary; run from the repository root. The pages need about --pages open files in this process and in the server (ulimit -n)."
    )

    /// The least time between two of a page's requests (`POLL_MS` in track.js).
    static let pollSeconds = 1.5

    var visits = 10_000
    var callers = 8
    var seconds = 10.0
    var pages = 10_000
    var connections = 16
    var rounds = 2
    var changesPerSecond = 10.0
    var conditional = false
    var inProcess = false

    init(arguments: [String]) throws {
        let parsed = try Self.syntax.parse(arguments)
        visits = try parsed.integer("--visits", in: 1...1_000_000) ?? visits
        callers = try parsed.integer("--callers", in: 1...1_000) ?? callers
        inProcess = parsed.has("--in-process")
        conditional = parsed.has("--conditional")
        seconds = try parsed.positiveNumber("--seconds") ?? (inProcess ? 5 : seconds)
        pages = try parsed.integer("--pages", in: 1...15_000) ?? pages
        connections = try parsed.integer("--connections", in: 1...512) ?? connections
        rounds = try parsed.integer("--rounds", in: 1...20) ?? rounds
        changesPerSecond = Double(try parsed.integer("--changes", in: 0...1_000) ?? Int(changesPerSecond))
    }

    func run() async throws {
        if inProcess { try await runInProcess() } else { try await runOverHTTP() }
    }

    // MARK: over HTTP, beside the pipeline

    func runOverHTTP() async throws {
        let serverURL = try BenchmarkEnvironment.serverURL()
        let root = URL(fileURLWithPath: FileManager.default.currentDirectoryPath)
        let executable = try BenchmarkEnvironment.livevisits()
        let book = AckBook()
        let rig = try await ScaleBenchmark.Rig.start(root: root, livevisits: executable.path, recorded: 1) {
            book.note($0)
        }
        defer { Task { await rig.stop() } }
        let postmaster = try await PipelineBenchmark.postmaster(url: serverURL)
        let pipeline = try PipelineBenchmark(arguments: [
            "--connections", String(connections), "--seconds", String(seconds), "--layouts", "serve", "--no-pgbench",
            "--no-aioapns",
        ])
        let database = try await ScratchDatabase.create(
            serverURL: serverURL, migrations: root.appendingPathComponent("Migrations"))
        do {
            try await measureOverHTTP(pipeline: pipeline, database: database, rig: rig, book: book, postmaster: postmaster)
            await database.drop()
        } catch {
            await database.drop()
            throw error
        }
    }

    func measureOverHTTP(
        pipeline: PipelineBenchmark, database: ScratchDatabase, rig: ScaleBenchmark.Rig, book: AckBook, postmaster: Int32
    ) async throws {
        let (server, port) = try await rig.startServer(
            databaseURL: database.url, arguments: ["serve"],
            settings: ["LIVEVISITS_HTTP_MAX_CONNECTIONS": String(pages + connections + 1024)])
        defer { server.signal(SIGTERM) }
        let dispatcher = try await rig.dispatcherKey(databaseURL: database.url)
        let customer = try await PipelineBenchmark.customerKey(port: port, dispatcher: dispatcher)
        let loadVisits = connections * pipeline.visitsPerConnection
        let prefix = "pserve-"
        let acceptedBefore = book.accepted
        try await pipeline.setUp(visits: loadVisits, prefix: prefix, port: port, dispatcher: dispatcher, customer: customer)
        let cursor = VisitCursor(count: loadVisits)
        // Warm-up, untimed, as the pipeline's: every visit's first event, its push awaited.
        try await pipeline.post(visits: loadVisits, prefix: prefix, port: port, dispatcher: dispatcher, cursor: cursor)
        try await PipelineBenchmark.waitFor(book, accepted: acceptedBefore + loadVisits, within: 300)
        let t0 = Date()
        let tokens = try await bookTrackedVisits(port: port, dispatcher: dispatcher)
        say(
            String(
                format:
                    "tracking benchmark over HTTP: %d pages (one connection each, %@ %.1f s), "
                    + "%.0f events/s to tracked visits, pipeline load of %d clients for %.0f s, "
                    + "%d rounds; %d tracked visits made in %.1f s; load %@",
                pages,
                conditional
                    ? "asking with If-None-Match every" : "asking after their version, held, at most every",
                Self.pollSeconds, changesPerSecond, connections, seconds, rounds,
                tokens.count, Date().timeIntervalSince(t0),
                PipelineBenchmark.loadAverage()))
        let weight = try await pageWeight(port: port, token: tokens[0].token)
        say("page weight: HTML \(weight.html) + script \(weight.script) + style \(weight.style) = \(weight.total) bytes")

        var without: [PipelineBenchmark.Run] = []
        var with: [(run: PipelineBenchmark.Run, pages: PageFigures)] = []
        var firstChanged = 0
        for round in 1...rounds {
            for withPages in round % 2 == 1 ? [false, true] : [true, false] {
                try await database.settle()
                try await Task.sleep(for: .seconds(1))
                if withPages {
                    let (run, figures) = try await pipelineBesidePages(
                        pipeline: pipeline, tokens: tokens, firstChanged: firstChanged, port: port, prefix: prefix,
                        dispatcher: dispatcher, cursor: cursor, book: book, server: server.pid, postmaster: postmaster,
                        database: database)
                    firstChanged += figures.changes
                    with.append((run, figures))
                    say(
                        String(
                            format:
                                "round %d, with pages: %.0f events/s (HTTP p99 %.1f ms); state: %d requests = %.0f/s, %d failed; "
                                + "%d answered at once: p50 %.1f ms, p99 %.1f ms, max %.1f ms; %d held to their end: "
                                + "answered p99 %.1f ms past it; %d events to tracked visits shown p50 %.0f ms, p99 %.0f ms, "
                                + "max %.0f ms after their 201 (%d not seen); GET /healthz beside them (the floor): %d, "
                                + "p50 %.1f ms, p99 %.1f ms; %@; load %@",
                            round, run.eventsPerSecond, run.httpP99 * 1000, figures.requests, figures.perSecond,
                            figures.failed, figures.immediate, figures.p50 * 1000, figures.p99 * 1000, figures.max * 1000,
                            figures.heldOut, figures.overrunP99 * 1000, figures.changes, figures.changeP50 * 1000,
                            figures.changeP99 * 1000, figures.changeMax * 1000, figures.missed, figures.floor,
                            figures.floorP50 * 1000, figures.floorP99 * 1000, Self.cores(run),
                            PipelineBenchmark.loadAverage()))
                } else {
                    let run = try await pipeline.load(
                        layout: .serve, connections: connections, prefix: prefix, port: port, dispatcher: dispatcher,
                        cursor: cursor, book: book, processes: [server.pid], postmaster: postmaster, database: database)
                    without.append(run)
                    say(
                        String(
                            format: "round %d, without pages: %.0f events/s (HTTP p99 %.1f ms); %@; load %@", round,
                            run.eventsPerSecond, run.httpP99 * 1000, Self.cores(run), PipelineBenchmark.loadAverage()))
                }
            }
        }
        let off = without.map(\.eventsPerSecond)
        let on = with.map(\.run.eventsPerSecond)
        let mean = { (values: [Double]) in values.reduce(0, +) / Double(max(values.count, 1)) }
        let p99s = with.map(\.pages.p99)
        let floors = with.map(\.pages.floorP99)
        say("")
        say(
            String(
                format: "pipeline events/s: %.0f without pages (%@), %.0f with %d pages (%@): ratio %.2f (target ≥ 0.90)",
                mean(off), Self.spread(off), mean(on), pages, Self.spread(on), mean(on) / mean(off)))
        say(
            String(
                format:
                    "GET /track/<token>/state beside the pipeline: answered at once p99 %.1f ms (rounds: %@; target < 20 ms), "
                    + "%.0f requests/s; an event shown p99 %.0f ms after its 201 (target < 2,000 ms)",
                mean(p99s) * 1000, p99s.map { String(format: "%.1f", $0 * 1000) }.joined(separator: ", "),
                mean(with.map(\.pages.perSecond)), mean(with.map(\.pages.changeP99)) * 1000))
        say(
            String(
                format:
                    "GET /healthz beside them, the floor of any answer on this machine under the same load: p99 %.1f ms "
                    + "(rounds: %@); the state's p99 over the floor's: %.2f",
                mean(floors) * 1000, floors.map { String(format: "%.1f", $0 * 1000) }.joined(separator: ", "),
                mean(p99s) / mean(floors)))
        say(String(format: "page weight %d bytes (target < 30,720)", weight.total))
    }

    /// Books `pages` visits (no Live Activity: a tracking page is for the customer without one) and makes each a
    /// tracking link through the API (64 clients, untimed); the visits' ids and their links' tokens.
    func bookTrackedVisits(port: UInt16, dispatcher: String) async throws -> [(visit: String, token: String)] {
        let width = min(64, pages)
        let now = Int(Date().timeIntervalSince1970)
        let made = try await LoadConnection.drive(port: port, connections: width) { c, i in
            var tokens: [(visit: String, token: String)] = []
            for v in stride(from: i, to: pages, by: width) {
                let id = "track-\(v)"
                let visit = """
                    {"visitId":"\(id)","customerId":"c-\(v)","attributes":{"customerFirstName":"Alex",\
                    "serviceAddress":"12 Elm Row","jobSummary":"Boiler check"},"technician":{"id":"t-\(v % 300)",\
                    "name":"Technician \(v % 300)","avatarSymbol":"person.crop.circle","vanDescription":"White van"},\
                    "arrivalWindow":{"start":\(now + 600),"end":\(now + 2400)},"kilometresAway":14}
                    """
                let booked = try c.exchange(LoadConnection.request("POST", "/v1/visits", key: dispatcher, body: visit))
                guard booked.status == 201 else {
                    throw BenchmarkUsageError(message: "POST /v1/visits answered \(booked.status)")
                }
                let link = try c.exchange(
                    LoadConnection.request("POST", "/v1/visits/\(id)/tracking-link", key: dispatcher, body: "{}"))
                guard link.status == 201, let url = (try? JSONValue.parse(link.body))?["url"]?.stringValue,
                    url.hasPrefix("/track/")
                else { throw BenchmarkUsageError(message: "POST /v1/visits/{id}/tracking-link answered \(link.status)") }
                tokens.append((id, String(url.dropFirst("/track/".count))))
            }
            return tokens
        }
        return made.flatMap { $0 }
    }

    /// The page, its script and its style as the server sends them (bodies only).
    func pageWeight(port: UInt16, token: String) async throws -> (html: Int, script: Int, style: Int, total: Int) {
        let sizes = try await LoadConnection.drive(port: port, connections: 1) { c, _ in
            try ["/track/\(token)", "/tracking/track.js", "/tracking/track.css"].map { path in
                let answer = try c.exchange(LoadConnection.request("GET", path, key: "", body: nil))
                guard answer.status == 200 else { throw BenchmarkUsageError(message: "GET \(path) answered \(answer.status)") }
                return answer.body.count
            }
        }[0]
        return (sizes[0], sizes[1], sizes[2], sizes.reduce(0, +))
    }

    /// What the pages saw during one pipeline load.
    struct PageFigures {
        /// Requests sent in the window, and those answered other than 200 or 304.
        var requests = 0
        var failed = 0
        var perSecond = 0.0
        /// Plain asks (a page opened or reloaded), answered at once: their times.
        var immediate = 0
        var p50 = 0.0
        var p99 = 0.0
        var max = 0.0
        /// Requests held until their hold passed (304): how long past the hold they were answered, p99.
        var heldOut = 0
        var overrunP99 = 0.0
        /// The events posted to tracked visits: from the 201 to the page's answer showing it.
        var changes = 0
        var missed = 0
        var changeP50 = 0.0
        var changeP99 = 0.0
        var changeMax = 0.0
        /// The reference beside them: `GET /healthz`, answered with no database and nothing of ours to read.
        var floor = 0
        var floorP50 = 0.0
        var floorP99 = 0.0
    }

    /// The reference's clients, and how many of its requests go out a second in all (about as many as the
    /// pages' plain asks).
    static let floorClients = 20
    static let floorPerSecond = 20.0

    /// The pages open and asking (a warm-up first: one hold, or two poll periods with `conditional`, so that the
    /// pages, opened at random moments over it, ask as steadily as pages open for long), the pipeline's load
    /// meanwhile, and
    /// `changesPerSecond` events (`enRoute`) posted to tracked visits not changed before, starting at `firstChanged`;
    /// what the pages saw of the requests sent during the load.
    func pipelineBesidePages(
        pipeline: PipelineBenchmark, tokens: [(visit: String, token: String)], firstChanged: Int, port: UInt16,
        prefix: String, dispatcher: String, cursor: VisitCursor, book: AckBook, server: Int32, postmaster: Int32,
        database: ScratchDatabase
    ) async throws -> (PipelineBenchmark.Run, PageFigures) {
        // Each page's connection opens with its first ask, as a page opened then would.
        let opened = tokens.map { _ in LoadConnection(lazilyTo: port) }
        let hold = TrackingCards.defaultHoldSeconds
        let spread = conditional ? Self.pollSeconds : hold
        let warmUp = conditional ? 2 * Self.pollSeconds : hold + Self.pollSeconds
        let until = LoadConnection.now() + warmUp + seconds + 1
        let pollers = tokens.map {
            PagePoller(
                token: $0.token, every: Self.pollSeconds, firstWithin: spread, until: until, conditional: conditional)
        }
        // The reference: a static answer asked as often as the pages' plain asks come, measured beside them.
        let floors = (0..<Self.floorClients).map { _ in
            FloorPoller(every: Double(Self.floorClients) / Self.floorPerSecond, until: until)
        }
        // The pages' connections and clients are the loop's alone until it returns; read only after that.
        nonisolated(unsafe) let pageConnections = opened + floors.map { _ in LoadConnection(lazilyTo: port) }
        nonisolated(unsafe) let pageClients: [any LoadClient] = pollers + floors
        let polling = Task { try await LoadLoop.run(connections: pageConnections, clients: pageClients) }
        try await Task.sleep(for: .seconds(warmUp))
        let started = LoadConnection.now()
        let count = min(Int(changesPerSecond * seconds), tokens.count - firstChanged)
        let changed = Array(firstChanged..<(firstChanged + max(0, count)))
        let visits = changed.map { tokens[$0].visit }
        let interval = 1 / max(changesPerSecond, 0.001)
        let posting = Task {
            try await LoadConnection.drive(port: port, connections: 1) { c, _ -> [Double] in
                var committed: [Double] = []
                for (n, visit) in visits.enumerated() {
                    let at = started + Double(n) * interval
                    let wait = at - LoadConnection.now()
                    if wait > 0 { usleep(UInt32(wait * 1_000_000)) }
                    let answer = try c.exchange(
                        LoadConnection.request(
                            "POST", "/v1/visits/\(visit)/events", key: dispatcher, body: #"{"type":"enRoute"}"#))
                    guard answer.status == 201 else { throw BenchmarkUsageError(message: "an enRoute answered \(answer.status)") }
                    committed.append(LoadConnection.now())
                }
                return committed
            }[0]
        }
        let run: PipelineBenchmark.Run
        do {
            run = try await pipeline.load(
                layout: .serve, connections: connections, prefix: prefix, port: port, dispatcher: dispatcher, cursor: cursor,
                book: book, processes: [server], postmaster: postmaster, database: database)
        } catch {
            _ = try? await polling.value
            _ = try? await posting.value
            throw error
        }
        let committed = try await posting.value
        // The pages stop on their own at `until` (the pipeline's load takes `seconds`, then waits for its pushes).
        try await polling.value
        let window = started...(started + seconds)
        let answers = pollers.flatMap(\.answers).filter { window.contains($0.sent) }
        func percentile(_ values: [Double], _ p: Double) -> Double {
            values.isEmpty ? .nan : values[min(values.count - 1, Int(Double(values.count) * p))]
        }
        // Answered at once: the plain asks (a page opened or reloaded).
        let immediate = answers.filter { ($0.status == 200 || $0.status == 304) && !$0.held }.map(\.seconds).sorted()
        let heldOut = answers.filter { $0.status == 304 && $0.held }.map { $0.seconds - hold }.sorted()
        var delays: [Double] = []
        for (index, at) in zip(changed, committed) {
            if let shown = pollers[index].answers.first(where: { $0.status == 200 && $0.sent + $0.seconds >= at }) {
                delays.append(shown.sent + shown.seconds - at)
            }
        }
        delays.sort()
        let floor = floors.flatMap(\.answers).filter { window.contains($0.sent) && $0.status == 200 }.map(\.seconds).sorted()
        let figures = PageFigures(
            requests: answers.count, failed: answers.filter { $0.status != 200 && $0.status != 304 }.count,
            perSecond: Double(answers.count) / seconds, immediate: immediate.count, p50: percentile(immediate, 0.5),
            p99: percentile(immediate, 0.99), max: immediate.last ?? .nan, heldOut: heldOut.count,
            overrunP99: percentile(heldOut, 0.99), changes: committed.count, missed: committed.count - delays.count,
            changeP50: percentile(delays, 0.5), changeP99: percentile(delays, 0.99), changeMax: delays.last ?? .nan,
            floor: floor.count, floorP50: percentile(floor, 0.5), floorP99: percentile(floor, 0.99))
        return (run, figures)
    }

    /// The CPU each side used over the measurement (the wait for its pushes included), in cores.
    static func cores(_ run: PipelineBenchmark.Run) -> String {
        String(
            format: "CPU in cores: livevisits %.2f, PostgreSQL %.2f, this process (clients, pages, APNs sink) %.2f",
            run.ours / run.seconds, run.postgres / run.seconds, run.bench / run.seconds)
    }

    /// "min–max" of a few figures.
    static func spread(_ values: [Double]) -> String {
        String(format: "%.0f–%.0f", values.min() ?? .nan, values.max() ?? .nan)
    }

    /// A line on stdout at once (print buffers when stdout is a pipe).
    func say(_ line: String) {
        FileHandle.standardOutput.write(Data((line + "\n").utf8))
    }

    // MARK: in process

    func runInProcess() async throws {
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
                        10_000 / Self.pollSeconds, 10_000 / Self.pollSeconds / state.perSecond * 100))
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

/// One open tracking page, as its script asks: its state first (at a random point of the first `firstWithin`
/// seconds, as pages opened at different moments do), then `?after=<version>` with the version as
/// `If-None-Match`, held by the server until the card changes or its hold passes, asked again as soon as an answer
/// is in but never sooner than `every` seconds after the previous request went out, until `until`, noting each
/// answer. `conditional`: the page's earlier way, `If-None-Match` alone `every` seconds after each answer. The
/// version is read off the answer's status: a tracked visit is at 1 when booked and at 2 after the one
/// `enRoute` the benchmark may post to it (`LoadConnection` reads no headers, so not the ETag). After each answer
/// the page is reloaded with a chance of `reloadChance` (it then asks its state plainly again), as pages are
/// opened and reloaded while others stay open: those plain asks are the answers measured as given at once.
final class PagePoller: LoadClient {
    static let reloadChance = 0.05
    private let path: String
    private let every: Double
    private let firstWithin: Double
    private let until: Double
    private var due: Double?
    private var sent = 0.0
    private var version: Int?
    private var askedAfter: Int?
    /// Each answer: when its request went out, how long it took, its status, and whether it asked for a change.
    private(set) var answers: [(sent: Double, seconds: Double, status: Int, held: Bool)] = []

    /// Asking with `If-None-Match` alone, `every` seconds after each answer, instead of asking to be held.
    private let conditional: Bool

    init(token: String, every: Double, firstWithin: Double, until: Double, conditional: Bool = false) {
        path = "/track/\(token)/state"
        self.conditional = conditional
        self.every = every
        self.firstWithin = firstWithin
        self.until = until
        answers.reserveCapacity(16)
    }

    var dueAt: Double? {
        if let due { return due }
        let first = LoadConnection.now() + Double.random(in: 0..<firstWithin)
        due = first
        return first
    }

    func next() -> [UInt8]? {
        sent = LoadConnection.now()
        guard sent < until else { return nil }
        askedAfter = conditional ? nil : version
        guard let version else {
            return Array("GET \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: application/json\r\n\r\n".utf8)
        }
        if conditional {
            return Array(
                "GET \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: application/json\r\nIf-None-Match: \"\(version)\"\r\n\r\n"
                    .utf8)
        }
        return Array(
            "GET \(path)?after=\(version) HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: application/json\r\nIf-None-Match: \"\(version)\"\r\n\r\n"
                .utf8)
    }

    private static let enRoute = Array(#""status":"enRoute""#.utf8)

    func answered(status: Int, body: [UInt8]) {
        let now = LoadConnection.now()
        answers.append((sent, now - sent, status, askedAfter != nil))
        if status == 200 { version = body.firstRange(of: Self.enRoute) == nil ? 1 : 2 }
        if Double.random(in: 0..<1) < Self.reloadChance { version = nil }
        due = conditional ? now + every : max(now, sent + every)
    }
}

/// The reference beside the pages: `GET /healthz` (a static answer: no database, no memory of ours) every
/// `every` seconds on a connection of its own, from a random moment of the first interval, until `until`.
/// What it waits is what any request waits on this machine under the same load.
final class FloorPoller: LoadClient {
    private let every: Double
    private let until: Double
    private var due: Double?
    private var sent = 0.0
    private(set) var answers: [(sent: Double, seconds: Double, status: Int)] = []

    init(every: Double, until: Double) {
        self.every = every
        self.until = until
    }

    var dueAt: Double? {
        if let due { return due }
        let first = LoadConnection.now() + Double.random(in: 0..<every)
        due = first
        return first
    }

    func next() -> [UInt8]? {
        sent = LoadConnection.now()
        guard sent < until else { return nil }
        return Array("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".utf8)
    }

    func answered(status: Int, body: [UInt8]) {
        answers.append((sent, LoadConnection.now() - sent, status))
        due = sent + every
    }
}
