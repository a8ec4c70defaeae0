import APIStores
import Foundation
import HTTPAPI
import HTTPServer
import Outbox
import PersonalData
import Postgres
import Runtime
import TestSupport
import VisitDomain
import VisitProjections

/// The API served in-process on 127.0.0.1:0 over a scratch (or given) database, with a dispatcher,
/// an ops key and a raw socket client. Tests talk to it only through HTTP.
final class APIServer: Sendable {
    let databaseURL: String
    let pool: PostgresPool
    let server: HTTPServer
    let client: RawHTTPClient
    let dispatcher: String
    let ops: String
    /// What the handlers use (its batcher counts the group-commit batches run).
    let environment: APIEnvironment
    private let task: Task<Void, any Error>

    private init(
        databaseURL: String, pool: PostgresPool, server: HTTPServer, dispatcher: String, ops: String, environment: APIEnvironment,
        task: Task<Void, any Error>
    ) {
        self.environment = environment
        self.databaseURL = databaseURL
        self.pool = pool
        self.server = server
        self.client = RawHTTPClient(port: server.address.port)
        self.dispatcher = dispatcher
        self.ops = ops
        self.task = task
    }

    /// Starts the API on a fresh migrated database, or on `databaseURL` (already migrated) when given.
    /// With `keyCache`, its revocation listener runs next to the server (as in `livevisits serve`); with
    /// `listenForErasures`, the erasure listener of `dataKeyCache` too.
    /// `clock` is the API's (events' recorded times, token registrations, the outbox's due times, the
    /// request limits); the HTTP server keeps the system clock for its own deadlines. `limits` are none
    /// unless given: most tests send many requests a second with one key, from one address.
    static func start(
        databaseURL: String? = nil, poolSize: Int = 8, acquireTimeoutSeconds: Double? = nil,
        keyCache: APIKeyCache = APIKeyCache(),
        listenForRevocations: Bool = false, clock apiClock: any WallClock = SystemClock(),
        personalData: PersonalDataKeys = PersonalDataKeys(current: nil),
        channelService: (any ChannelService)? = nil, maximumChannels: Int = ChannelStore.defaultMaximumChannels,
        outboxConfiguration: OutboxConfiguration = OutboxConfiguration(),
        dataKeyCache: PersonalDataKeyCache = PersonalDataKeyCache(), listenForErasures: Bool = false,
        limits: RequestLimits = .none
    ) async throws -> APIServer {
        let url: String
        if let databaseURL {
            url = databaseURL
        } else {
            url = try await TestDatabase.createMigrated()
        }
        var configuration = PostgresConfiguration(url: url, size: poolSize)
        if let acquireTimeoutSeconds { configuration.acquireTimeoutSeconds = acquireTimeoutSeconds }
        let pool = PostgresPool(configuration: configuration)
        let clock = SystemClock()
        let rules = try ProjectionRules.load(directory: TestDatabase.projectionsDirectory)
        let readModel = try VisitReadModel(projectionsDirectory: TestDatabase.projectionsDirectory, rules: rules)
        // One registry per server, so what its /metrics counts is this test's alone.
        let metrics = Metrics()
        let environment = APIEnvironment(
            pool: pool, readModel: readModel, outbox: Outbox(pool: pool, configuration: outboxConfiguration, clock: apiClock),
            migrator: Migrator(directory: TestDatabase.migrationsDirectory), clock: apiClock, keyCache: keyCache,
            metrics: metrics, personalData: personalData, channelService: channelService, maximumChannels: maximumChannels,
            dataKeyCache: dataKeyCache, limits: limits)
        let api = LiveVisitsAPI(environment: environment)
        var httpConfiguration = HTTPServerConfiguration(listenAddress: ListenAddress(host: "127.0.0.1", port: 0))
        httpConfiguration.threadCount = 4
        let server = try HTTPServer(configuration: httpConfiguration, clock: clock, metrics: metrics, handler: api.handler())
        let listeners: [any Service] =
            (listenForRevocations ? [keyCache.listener(url: url)] : [])
            + (listenForErasures ? [dataKeyCache.listener(url: url)] : [])
            + [environment.locations.listener(url: url), environment.locations]
            + (environment.trackingLinks.cards.listeners(url: url) as [any Service]) + [environment.trackingLinks.cards]
        let task = Task {
            try await withThrowingTaskGroup(of: Void.self) { group in
                for listener in listeners { group.addTask { try await listener.run() } }
                group.addTask { try await server.run() }
                try await group.next()
                group.cancelAll()
            }
        }
        let (dispatcher, ops) = try await pool.withConnection { c in
            (
                try APIKeys.mint(role: .dispatcher, subject: nil, createdBy: nil, on: c).key,
                try APIKeys.mint(role: .ops, subject: nil, createdBy: nil, on: c).key
            )
        }
        return APIServer(
            databaseURL: url, pool: pool, server: server, dispatcher: dispatcher, ops: ops, environment: environment, task: task)
    }

    func stop() async {
        task.cancel()
        _ = try? await task.value
        await pool.close()
    }

    /// A stored text (a read-model view, a stored answer) with its sealed personal fields opened, as the API
    /// gives it.
    func opened(_ text: String) async throws -> String {
        let opener = PersonalDataOpener(keys: environment.personalData)
        return try await pool.withConnection { String(decoding: try opener.open(Array(text.utf8), on: $0).bytes, as: UTF8.self) }
    }

    /// Mints a key straight in the database (what `livevisits keys create` does).
    func key(_ role: Role, _ subject: String? = nil) async throws -> String {
        try await pool.withConnection { try APIKeys.mint(role: role, subject: subject, createdBy: nil, on: $0).key }
    }

    /// One request with a bearer key and an optional JSON body.
    func call(_ method: String, _ path: String, key: String?, json: String? = nil, headers: [(String, String)] = []) async throws
        -> RawResponse
    {
        var all = headers
        if let key { all.append(("Authorization", "Bearer \(key)")) }
        return try await client.send(method, path, headers: all, body: json.map { Array($0.utf8) })
    }

    /// Schedules a visit as the dispatcher and returns the answer.
    @discardableResult
    func schedule(
        _ visitId: String, customer: String = "c-1", technician: String = "t-1", key: String? = nil,
        headers: [(String, String)] = []
    ) async throws -> RawResponse {
        try await call(
            "POST", "/v1/visits", key: key ?? dispatcher,
            json: APIServer.visitJSON(visitId, customer: customer, technician: technician),
            headers: headers)
    }

    /// Posts one event.
    @discardableResult
    func post(_ visitId: String, _ json: String, key: String? = nil, headers: [(String, String)] = []) async throws -> RawResponse
    {
        try await call("POST", "/v1/visits/\(visitId)/events", key: key ?? dispatcher, json: json, headers: headers)
    }

    /// Number of events in the visit's stream, straight from the database.
    func eventCount(_ visitId: String) async throws -> Int {
        let stream = "visit-\(visitId)"
        return try await pool.withConnection { c in
            try c.query("SELECT count(*)::int AS n FROM events WHERE stream_name = \(stream)").first!.int("n")
        }
    }

    static func visitJSON(_ visitId: String?, customer: String = "c-1", technician: String = "t-1") -> String {
        let now = Int(Date().timeIntervalSince1970)
        let id = visitId.map { "\"visitId\":\"\($0)\"," } ?? ""
        return """
            {\(id)"customerId":"\(customer)",\
            "attributes":{"customerFirstName":"Alex","serviceAddress":"12 Elm Row","jobSummary":"Boiler check"},\
            "technician":{"id":"\(technician)","name":"Sam","avatarSymbol":"person.crop.circle","vanDescription":"White van"},\
            "arrivalWindow":{"start":\(now + 600),"end":\(now + 1800)},"kilometresAway":14.0}
            """
    }
}

/// A unique id per call, so tests sharing a server never collide.
func uniqueID(_ prefix: String) -> String {
    "\(prefix)-\(UUID().uuidString.prefix(8).lowercased())"
}

/// A 64-hex-digit push token unique to `name`.
func pushToken(_ name: String) -> String {
    var hex = ""
    for byte in Array(name.utf8) { hex += String(format: "%02x", byte) }
    while hex.count < 64 { hex += "a" }
    return String(hex.prefix(64))
}

/// Lends an `APIServer` started with these arguments (see `APIServer.start`) to `body` and stops it once `body`
/// has returned or thrown.
func withAPIServer<Result>(
    databaseURL: String? = nil, poolSize: Int = 8, acquireTimeoutSeconds: Double? = nil,
    keyCache: APIKeyCache = APIKeyCache(),
    listenForRevocations: Bool = false, clock: any WallClock = SystemClock(),
    personalData: PersonalDataKeys = PersonalDataKeys(current: nil),
    channelService: (any ChannelService)? = nil, maximumChannels: Int = ChannelStore.defaultMaximumChannels,
    outboxConfiguration: OutboxConfiguration = OutboxConfiguration(),
    dataKeyCache: PersonalDataKeyCache = PersonalDataKeyCache(), listenForErasures: Bool = false,
    limits: RequestLimits = .none, isolation: isolated (any Actor)? = #isolation,
    _ body: (APIServer) async throws -> Result
) async throws -> Result {
    try await withResource(
        {
            try await APIServer.start(
                databaseURL: databaseURL, poolSize: poolSize, acquireTimeoutSeconds: acquireTimeoutSeconds,
                keyCache: keyCache, listenForRevocations: listenForRevocations, clock: clock, personalData: personalData,
                channelService: channelService, maximumChannels: maximumChannels,
                outboxConfiguration: outboxConfiguration, dataKeyCache: dataKeyCache, listenForErasures: listenForErasures,
                limits: limits)
        }, close: { await $0.stop() }, body)
}
