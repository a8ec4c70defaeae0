import APIStores
import Foundation
import HTTPAPI
import HTTPServer
import JSON
import Outbox
import PersonalData
import Postgres
import Runtime
import VisitDomain
import VisitProjections

/// `livevisits-bench seed [--events N] [--visits N] [--drop]`: a scratch database loaded with a year-sized
/// store (`StoreSeed`), then read back through the API's handler (a sample of visits, their history, the
/// list, a followed visit's pushes) against what the generator decided. Kept unless `--drop`: it prints
/// the database's URL and its key file for `big-store --database`.
struct SeedBenchmark {
    static let summary = "load a year-sized store (default 10,000,000 events over 500,000 visits) by COPY and check it"
    var events = 10_000_000
    var visits = 500_000
    var drop = false

    static let syntax = CommandSyntax(
        command: "livevisits-bench seed", summary: summary,
        options: [
            .value("--events", "N", "events to load, about N/visits a visit (default 10000000)"),
            .value("--visits", "N", "visits over the year (default 500000)"),
            .flag("--drop", "drop the database after the check (else it is kept, for big-store --database)"),
        ],
        details: "Needs LIVEVISITS_DATABASE_URL.")

    init(arguments: [String]) throws {
        let parsed = try Self.syntax.parse(arguments)
        events = try parsed.integer("--events", in: 1...Int.max) ?? events
        visits = try parsed.integer("--visits", in: 1...Int.max) ?? visits
        if events < visits * 3 { throw Self.syntax.mistake("--events must be at least 3 × --visits") }
        drop = parsed.has("--drop")
    }

    func run() async throws {
        let server = try BenchmarkEnvironment.serverURL()
        let root = URL(fileURLWithPath: FileManager.default.currentDirectoryPath)
        let database = try await ScratchDatabase.create(serverURL: server, migrations: root.appendingPathComponent("Migrations"))
        let keyPath = SeededStore.keyPath(database: database.name)
        do {
            let store = try await SeededStore.load(
                database: database, keyPath: keyPath, events: events, visits: visits, root: root)
            if drop {
                await database.drop()
                try? FileManager.default.removeItem(atPath: keyPath)
            } else {
                print(
                    "kept database \(database.name) (its key file \(keyPath)):\n  livevisits-bench big-store --database \(database.name) "
                        + "--key-file \(keyPath) --visits \(store.visits)")
            }
        } catch {
            await database.drop()
            try? FileManager.default.removeItem(atPath: keyPath)
            throw error
        }
    }
}

/// A database loaded by `StoreSeed` and checked through the API.
struct SeededStore {
    let url: String
    let personalData: PersonalDataKeys
    let seed: StoreSeed
    var visits: Int { seed.visits }

    static func keyPath(database: String) -> String {
        FileManager.default.temporaryDirectory.appendingPathComponent("\(database).key").path
    }

    static func readModel(root: URL) throws -> VisitReadModel {
        let projections = root.appendingPathComponent("Projections")
        return try VisitReadModel(projectionsDirectory: projections, rules: try ProjectionRules.load(directory: projections))
    }

    /// Seeds `database` (empty, migrated), prints the load's figures and checks a sample through the API.
    static func load(database: ScratchDatabase, keyPath: String, events: Int, visits: Int, root: URL) async throws -> SeededStore
    {
        let personalData = PersonalDataKeys(current: try WrappingKey.generate(path: keyPath))
        let readModel = try readModel(root: root)
        let seed = StoreSeed(events: events, visits: visits, now: Int(Date().timeIntervalSince1970))
        print(
            "seeding \(database.name): \(events) events over \(visits) visits, \(seed.customers) customers, \(seed.technicians) technicians …"
        )
        let report = try await PostgresPool.withPool(PostgresConfiguration(url: database.url, size: 4)) { pool in
            let report = try await seed.load(pool: pool, readModel: readModel, personalData: personalData) { print($0) }
            try await pool.withConnection { c in
                try c.execute(script: "VACUUM (ANALYZE)")
                try c.execute(script: "CHECKPOINT")
            }
            return report
        }
        let size = try await database.integer("SELECT pg_database_size(current_database()) AS n")
        print(
            String(
                format:
                    "seed: %d events, %d visits, %d live activities, %d deliveries in %.1f s (keys %.1f s, events %.1f s = %.0f events/s, "
                    + "read models %.1f s, devices and outbox %.1f s); database %.2f GB; load average %@",
                report.events, report.visits, report.activities, report.deliveries, report.seconds, report.keysSeconds,
                report.eventsSeconds, Double(report.events) / report.eventsSeconds, report.readModelSeconds, report.outboxSeconds,
                Double(size) / 1e9, ReplayBenchmark.loadAverage()))
        let store = SeededStore(url: database.url, personalData: personalData, seed: seed)
        try await store.check(readModel: readModel)
        return store
    }

    /// Reads a sample of visits back through the API's handler and compares each with the state the
    /// generator decided: status and version of `GET /v1/visits/{id}`, the opened first name (the customer's
    /// data key and the key file), the length of its history; a customer's list holds the visit; the last
    /// followed visit that has begun lists its pushes.
    func check(readModel: VisitReadModel) async throws {
        try await PostgresPool.withPool(PostgresConfiguration(url: url, size: 2)) { pool in
            let api = try await SeededStore.api(pool: pool, readModel: readModel, personalData: personalData)
            let sample = Set(stride(from: 0, to: seed.visits, by: max(1, seed.visits / 40)).map { $0 } + [seed.visits - 1])
            for i in sample.sorted() {
                // The customer's key (made by the load: read, not made).
                let key = try await pool.withConnection { try personalData.dataKey(forCustomer: seed.customerId(i), on: $0) }
                var state: VisitState? = nil
                let journey = try seed.journey(i, key: key, sealer: personalData)
                for (event, at) in journey {
                    state = try VisitDecider.accept(event, given: state, recordedAt: at, rules: readModel.rules).state
                }
                let id = StoreSeed.visitId(i)
                let visit = try await api.json("/v1/visits/\(id)")
                let expected = (version: Double(journey.count), status: state!.status.rawValue, name: StoreSeed.firstName(i))
                let found = (
                    version: visit["version"]?.doubleValue, status: visit["status"]?.stringValue,
                    name: visit["attributes"]?["customerFirstName"]?.stringValue
                )
                guard found.version == expected.version, found.status == expected.status, found.name == expected.name else {
                    throw BenchmarkUsageError(message: "check: GET /v1/visits/\(id) answered \(found), expected \(expected)")
                }
                let history = try await api.json("/v1/visits/\(id)/events")["events"]?.arrayElements?.count
                guard history == journey.count else {
                    throw BenchmarkUsageError(
                        message: "check: \(id) has \(history ?? -1) events through the API, \(journey.count) loaded")
                }
                let list = try await api.json("/v1/visits?customerId=\(seed.customerId(i))&limit=100")
                guard list["visits"]?.arrayElements?.isEmpty == false else {
                    throw BenchmarkUsageError(message: "check: the list of \(seed.customerId(i)) is empty")
                }
            }
            if let followed = seed.followedVisits().last(where: { seed.windowStart($0) + 3_600 <= seed.now }) {
                let pushes = try await api.json("/v1/visits/\(StoreSeed.visitId(followed))/deliveries")
                guard pushes["deliveries"]?.arrayElements?.isEmpty == false else {
                    throw BenchmarkUsageError(message: "check: \(StoreSeed.visitId(followed)) lists no deliveries")
                }
            }
            print(
                "check: \(sample.count) visits read back through the API as generated (status, version, opened name, history, list)"
            )
        }
    }

    /// The API's handler on `pool` with the store's key file, and a dispatcher's key for it.
    static func api(pool: PostgresPool, readModel: VisitReadModel, personalData: PersonalDataKeys) async throws -> SeededAPI {
        let environment = APIEnvironment(
            pool: pool, readModel: readModel, outbox: Outbox(pool: pool),
            migrator: Migrator(directory: URL(fileURLWithPath: "Migrations")), metrics: Metrics(),
            personalData: personalData, limits: APIBenchmark.InProcessReader.limits)
        let key = try await pool.withConnection { try APIKeys.mint(role: .dispatcher, subject: nil, createdBy: nil, on: $0).key }
        return SeededAPI(handler: LiveVisitsAPI(environment: environment).handler(), key: key)
    }
}

/// The API's handler with a dispatcher's key.
struct SeededAPI {
    let handler: HTTPHandler
    let key: String

    func request(_ method: HTTPMethod, _ path: String, body: String? = nil) -> HTTPRequest {
        let parts = path.split(separator: "?", maxSplits: 1)
        let query =
            parts.count > 1
            ? parts[1].split(separator: "&").map { item -> HTTPQueryItem in
                let pair = item.split(separator: "=", maxSplits: 1)
                return HTTPQueryItem(name: String(pair[0]), value: pair.count > 1 ? String(pair[1]) : nil)
            } : []
        var headers: HTTPHeaders = ["Authorization": "Bearer \(key)"]
        if body != nil { headers.add(name: "Content-Type", value: "application/json") }
        return HTTPRequest(
            method: method, rawPath: String(parts[0]), queryItems: query, headers: headers, body: Data((body ?? "").utf8))
    }

    /// The JSON of a GET that must answer 200.
    func json(_ path: String) async throws -> JSONValue {
        let response = await handler(request(.get, path))
        guard response.status == 200 else {
            throw BenchmarkUsageError(
                message: "GET \(path) answered \(response.status): \(String(decoding: response.body, as: UTF8.self))")
        }
        return try JSONValue.parse(Array(response.body))
    }
}
