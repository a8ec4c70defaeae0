import APIStores
import Foundation
import HTTPServer
import PersonalData
import Runtime
import Synchronization
import VisitCommands
import VisitDomain
import VisitProjections
import WebConsole

/// The HTTP API of contract §4: routes and the role table. Authentication and idempotency are middleware of
/// the routes (`authentication`, `idempotency`); the tables behind them are `KeyStore` and `IdempotencyStore`.
public struct LiveVisitsAPI: Sendable {
    public let environment: APIEnvironment
    let logger = Logger(label: "api")

    public init(environment: APIEnvironment) {
        self.environment = environment
    }

    /// The server's handler: the router, plus the caller's role on the request's log line.
    public func handler() -> HTTPHandler {
        let inner = router().handler
        return { request in
            let caller = CallerRecord()
            var response: HTTPResponse
            if request.body.count > LiveVisitsAPI.inlineBodyBytes {
                // The handler starts on libmicrohttpd's polling thread (`InlineTaskExecutor`) and would read the
                // body there before its first wait: a large one is read on Swift's pool instead, so that a
                // client's big bodies cannot hold up the other connections that thread serves.
                response = await withTaskExecutorPreference(globalConcurrentExecutor) {
                    await LiveVisitsAPI.$currentCaller.withValue(caller) { await inner(request) }
                }
            } else {
                response = await LiveVisitsAPI.$currentCaller.withValue(caller) { await inner(request) }
            }
            if !caller.answerOpened { response = await openPersonalData(response) }
            if let role = caller.role { response.logMetadata["actor.role"] = role }
            // The API's answers are per caller and change at once: never stored by a browser or a proxy (the
            // console's files set their own, revalidated, Cache-Control).
            if !response.headers.contains("Cache-Control") { response.headers.add(name: "Cache-Control", value: "no-store") }
            return response
        }
    }

    /// Every answer's sealed personal fields opened (plain text, or `null` once the customer is erased) on
    /// the way out: visits, lists, histories and stored idempotent answers all pass here, and nothing
    /// before this point holds the plain text. A value that cannot be read (its key file missing, a
    /// changed row) reads `null` as an erased one does, in a list and in a single visit alike; the opener
    /// counts it (`livevisits_personal_data_unreadable_total`) and logs each customer once.
    func openPersonalData(_ response: HTTPResponse) async -> HTTPResponse {
        // Only JSON answers hold visits (the console's files and /metrics are not scanned).
        guard response.headers["Content-Type"]?.hasPrefix("application/json") == true,
            PersonalDataOpener.mayHoldSealed(response.body)
        else { return response }
        let opener = PersonalDataOpener(
            keys: environment.personalData, cache: environment.dataKeyCache, metrics: environment.metrics)
        do {
            // Keys the cache holds are not read: an answer whose keys are all cached takes no connection.
            let opened = try await opener.open([UInt8](response.body), pool: environment.pool)
            var plain = response
            plain.body = Data(opened.bytes)
            return plain
        } catch {
            // The database unreachable, or any other failure to read the keys.
            return .error(status: 503, code: "unavailable", message: APIError.unavailable.message)
        }
    }

    /// The largest body a handler may read on the thread that started it (libmicrohttpd's). Reading is linear
    /// in the body's size, and a body this small (every body a well-behaved client sends but the longest
    /// visit texts) takes microseconds, less than a hop to another thread and back costs.
    static let inlineBodyBytes = 2_048

    /// Where `authenticate` leaves the caller's role for the log line of the current request.
    @TaskLocal static var currentCaller: CallerRecord?

    /// Every route of the contract.
    public func router() -> Router {
        var router = Router()
        router.add(.get, "/healthz") { _, _ in .json(body: Data(#"{"status":"ok"}"#.utf8)) }
        router.add(.get, "/readyz") { _, _ in
            await environment.readinessCache.answer(
                seconds: environment.limits.readinessCacheSeconds, clock: environment.clock, probe: { await readiness() })
        }
        router.add(.get, "/metrics") { _, _ in
            var headers = HTTPHeaders()
            headers.add(name: "Content-Type", value: "text/plain; version=0.0.4")
            return HTTPResponse(status: 200, headers: headers, body: Data(await environment.metrics.render().utf8))
        }
        addVisitRoutes(to: &router)
        addDeviceRoutes(to: &router)
        addLiveActivityRoutes(to: &router)
        addChannelRoutes(to: &router)
        addKeyRoutes(to: &router)
        addOpsRoutes(to: &router)
        addCustomerRoutes(to: &router)
        addDelayRoutes(to: &router)
        addLocationRoutes(to: &router)
        addTechnicianRoutes(to: &router)
        addTrackingRoutes(to: &router)
        WebConsole.addRoutes(to: &router)
        return router
    }

    // MARK: middleware

    /// The middleware of a route for callers with a key.
    var authenticated: [RouteMiddleware] { [authentication] }
    /// The middleware of a write route: a caller with a key, and its `Idempotency-Key` honoured.
    var idempotent: [RouteMiddleware] { [authentication, idempotency] }

    /// A route handler given the caller that `authentication` resolved.
    static func withCaller(
        _ handler: @escaping @Sendable (HTTPRequest, RouteParameters, Caller) async throws -> HTTPResponse
    ) -> RouteHandler {
        { request, parameters in try await handler(request, parameters, try Caller.authenticated()) }
    }

    /// A write route's handler: `prepare` checks the request (role, path ids, headers, body) for the caller and
    /// says what to write; `perform` runs it (with the claim `idempotency` bound, when the request has a key).
    func writing(_ prepare: @escaping @Sendable (HTTPRequest, RouteParameters, Caller) throws -> Write) -> RouteHandler {
        { request, parameters in
            let caller = try Caller.authenticated()
            return try await perform { try prepare(request, parameters, caller) }
        }
    }

    /// Runs `body`, turning every error a client can cause into its API answer.
    func mapped<T>(_ body: () async throws -> T) async throws -> T {
        do {
            return try await body()
        } catch {
            if let api = APIError.map(error) { throw api }
            throw error
        }
    }

    /// `/readyz`: 200 when this process can take writes — the database answers within
    /// `readinessTimeoutSeconds`, it is a primary, its commits can finish (it waits for no synchronous
    /// standby it lacks), every migration is applied and its personal-data key file opens the customers'
    /// data keys (`PersonalDataKeys.keyFileProblem`) — else 503 with a code naming the first check
    /// that failed. Either way `checks` says what each one found, and how LISTEN is doing (a process
    /// that cannot LISTEN polls instead, so that alone is no reason to fail). The route answers from
    /// `ReadinessCache` (one probe per `RequestLimits.readinessCacheSeconds`).
    func readiness() async -> HTTPResponse {
        let listen: JSONValue = .string(environment.keyCache.isActive ? "listening" : "polling")
        let readiness = environment.readiness
        let personalData = environment.personalData
        let pool = environment.pool
        let probe = await withDeadline(seconds: LiveVisitsAPI.readinessTimeoutSeconds) {
            () async -> (DatabaseReadiness.Finding, PersonalDataKeys.KeyFileProblem?) in
            let finding = await readiness.probe()
            guard case .answered = finding else { return (finding, nil) }
            // A failure to ask is the database's, which the probe just found answering: no key finding then.
            return (finding, try? await personalData.keyFileProblem(pool: pool))
        }
        func unready(_ code: String, _ message: String, _ checks: [JSONMember]) -> HTTPResponse {
            LiveVisitsAPI.noteReadiness(code, message)
            let error: JSONValue = ["code": .string(code), "message": .string(message)]
            return .json(status: 503, .object([JSONMember("error", error), JSONMember("checks", .object(checks))]))
        }
        guard let probe else {
            let seconds = LiveVisitsAPI.readinessTimeoutSeconds.formatted()
            return unready(
                "database_unreachable", "the database did not answer within \(seconds) s",
                [JSONMember("database", "no answer"), JSONMember("listen", listen)])
        }
        let status: DatabaseReadiness.State
        switch probe.0 {
        case .migrationsChanged(let message):
            return unready("migrations_changed", message, [JSONMember("database", "primary"), JSONMember("listen", listen)])
        case .unreachable:
            return unready(
                "database_unreachable", "the database is unreachable",
                [JSONMember("database", "unreachable"), JSONMember("listen", listen)])
        case .answered(let found):
            status = found
        }
        let pending = status.pendingMigrations
        let keyFileProblem = probe.1
        let checks: [JSONMember] = [
            JSONMember("database", .string(status.inRecovery ? "read-only (in recovery)" : "primary")),
            JSONMember("migrations", .string(pending.isEmpty ? "current" : "pending")),
            JSONMember("replication", .string(status.replication)),
            JSONMember("standbys", .number(Double(status.standbys))),
            JSONMember("listen", listen),
            JSONMember("personalDataKey", .string(keyFileProblem?.code ?? "opens")),
        ]
        if status.inRecovery {
            return unready(
                "database_read_only",
                "the database server is a standby (read-only); add target_session_attrs=read-write and every host to LIVEVISITS_DATABASE_URL",
                checks)
        }
        if let (connected, required) = status.missingStandbys {
            return unready(
                "synchronous_standby_missing",
                "commits wait for \(required) synchronous standby(s) (synchronous_standby_names = '\(status.synchronousStandbyNames)') "
                    + "and \(connected) is connected: every write hangs until one is back",
                checks)
        }
        guard pending.isEmpty else {
            return unready("migrations_pending", "pending migrations: \(pending.joined(separator: ", "))", checks)
        }
        if let keyFileProblem { return unready(keyFileProblem.code, keyFileProblem.message, checks) }
        LiveVisitsAPI.noteReadiness(nil, "")
        return .json(.object([JSONMember("status", "ready"), JSONMember("checks", .object(checks))]))
    }

    /// One log line when readiness changes (a load balancer asks every few seconds; the log need not).
    private static func noteReadiness(_ code: String?, _ message: String) {
        let changed = lastReadiness.withLock { last -> Bool in
            defer { last = code }
            return last != code
        }
        guard changed else { return }
        if let code {
            readinessLog.warning("not ready", ["readyz.code": code, "error": message])
        } else {
            readinessLog.info("ready")
        }
    }
    private static let lastReadiness = Lock<String?>(nil)

    /// How long `/readyz` waits for the database before it answers 503 itself.
    static let readinessTimeoutSeconds = 3.0
    private static let readinessLog = Logger(label: "readyz")

    // MARK: command transactions

    /// What a write answers: status, JSON body, optional ETag; and, for this run only (never stored with
    /// the answer), what it left for others to pick up after the commit.
    struct Answer: Sendable {
        var status: Int
        var body: String
        var etag: String?
        /// Events the write appended: counted and announced after the commit.
        var eventsAppended = 0
        /// Whether the write enqueued deliveries: the outbox workers are woken.
        var enqueuedPushes = false

        var response: HTTPResponse {
            var headers = HTTPHeaders()
            if let etag { headers.add(name: "ETag", value: etag) }
            if body.isEmpty { return HTTPResponse(status: status, headers: headers) }
            return .json(status: status, body: Data(body.utf8), headers: headers)
        }

        /// What is kept under an Idempotency-Key.
        var stored: StoredAnswer { StoredAnswer(status: status, body: body, etag: etag) }

        init(status: Int, body: String, etag: String? = nil, eventsAppended: Int = 0, enqueuedPushes: Bool = false) {
            self.status = status
            self.body = body
            self.etag = etag
            self.eventsAppended = eventsAppended
            self.enqueuedPushes = enqueuedPushes
        }

        init(_ stored: StoredAnswer) {
            self.init(status: stored.status, body: stored.body, etag: stored.etag)
        }

        init(error: APIError) {
            status = error.httpStatus
            body = String(
                decoding: HTTPResponse.error(
                    status: error.httpStatus, code: error.httpCode, message: error.httpMessage, field: error.httpField
                ).body,
                as: UTF8.self)
        }
    }

    /// A write route once its request is parsed and checked: how it runs with and without an `Idempotency-Key`.
    struct Write: Sendable {
        /// Lost version races are retried on the new state (not when the caller pinned a version).
        var retryOnConflict: Bool
        /// Without a key, runs instead of `work` (a visit command goes through group commit).
        var unkeyed: (@Sendable () async throws -> Answer)?
        /// With a key, tried before `work`: the write with the claim's statement in its own commit (a visit
        /// command through group commit). Any failure but an unreachable database falls back to `work`, which
        /// stores the refusal or finds the key taken: nothing of a failed try stands.
        var keyed: (@Sendable (IdempotencyClaim) async throws -> Answer)?
        /// The write on a connection, inside the transaction that also stores a keyed answer.
        var work: TransactionWork<Answer>

        init(
            retryOnConflict: Bool = false, unkeyed: (@Sendable () async throws -> Answer)? = nil,
            keyed: (@Sendable (IdempotencyClaim) async throws -> Answer)? = nil,
            _ work: @escaping TransactionWork<Answer>
        ) {
            self.retryOnConflict = retryOnConflict
            self.unkeyed = unkeyed
            self.keyed = keyed
            self.work = work
        }
    }

    /// Runs a write. With the request's `IdempotencyClaim` (bound by `idempotency`), the first answer is
    /// stored under the key in the write's transaction — a refusal from `prepare` or from the write, 4xx
    /// included, 503 not; a key found taken is thrown as `IdempotencyClaim.Taken` for the middleware to answer.
    /// Without one, nothing is stored and no statement is added: `prepare`'s refusal is answered at once,
    /// and `unkeyed` (when given) runs instead of `work`. Lost version races are retried when the write
    /// allows it (`LostRace`).
    func perform(_ prepare: () throws -> Write) async throws -> HTTPResponse {
        let claim = IdempotencyClaim.current
        let write: Write
        do {
            write = try prepare()
        } catch {
            guard let refusal = APIError.map(error) else { throw error }
            guard claim != nil, (400..<500).contains(refusal.httpStatus) else { throw refusal }
            // Refused before any work: kept as the key's first answer like a refusal from the write itself.
            write = Write { _ in throw refusal }
        }
        if let claim, let keyed = write.keyed {
            do {
                let answer = try await keyed(claim)
                committed(answer)
                return answer.response
            } catch is CancellationError {
                throw CancellationError()
            } catch {
                // Unreachable database: 503, never stored. Anything else — a refusal, the key taken by an
                // earlier request, a lost race — is the transaction's below to answer and keep.
                if let api = APIError.map(error), api.httpStatus == 503 { throw api }
            }
        }
        do {
            return try await LostRace.retrying(write.retryOnConflict) {
                if claim == nil, let unkeyed = write.unkeyed {
                    let answer = try await unkeyed()
                    committed(answer)
                    return answer.response
                }
                let answer = try await environment.transactions.run(
                    claim: claim, write.work,
                    refusal: { error in
                        // Kept as the key's answer: a refusal, not an unreachable database nor a lost race
                        // that is run again.
                        guard let api = APIError.map(error), api.httpStatus != 503 else { return nil }
                        if write.retryOnConflict, StorageFailure.isLostRace(error) { return nil }
                        return Answer(error: api)
                    }, stored: \.stored)
                committed(answer)
                return answer.response
            }
        } catch {
            if let api = APIError.map(error) { throw api }
            throw error
        }
    }

    /// After a write committed: count the events it appended and announce them, and wake the outbox
    /// workers when it enqueued deliveries. A stored answer or a refusal did neither.
    private func committed(_ answer: Answer) {
        if answer.eventsAppended > 0 { environment.commands.eventsCommitted(count: answer.eventsAppended) }
        if answer.enqueuedPushes { environment.pushes.committed() }
    }
}

/// The authenticated role of one request, for its log line (never the key).
final class CallerRecord: Sendable {
    private let value = Lock<String?>(nil)
    private let opened = Atomic<Bool>(false)
    var role: String? { value.withLock { $0 } }
    func set(role: String) { value.withLock { $0 = role } }
    /// Whether the handler's answer has its sealed fields opened already (an answer shared by several asks is
    /// opened once, by the read that made it): `handler()` then leaves it as it is.
    var answerOpened: Bool { opened.load(ordering: .relaxed) }
    func markAnswerOpened() { opened.store(true, ordering: .relaxed) }
}
