import EventStore
import Foundation
import HTTPServer
import Postgres
import Runtime
import Synchronization
import VisitCommands
import VisitDomain
import VisitProjections

/// The HTTP API of contract §4: routes, authentication, the role table, idempotency and error mapping.
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
            var response = await LiveVisitsAPI.$currentCaller.withValue(caller) { await inner(request) }
            if let role = caller.role { response.logMetadata["actor.role"] = role }
            return response
        }
    }

    /// Where `authenticate` leaves the caller's role for the log line of the current request.
    @TaskLocal static var currentCaller: CallerRecord?

    /// Every route of the contract.
    public func router() -> Router {
        var router = Router()
        router.add(.get, "/healthz") { _, _ in .json(body: Data(#"{"status":"ok"}"#.utf8)) }
        router.add(.get, "/readyz") { _, _ in await readiness() }
        router.add(.get, "/metrics") { _, _ in
            var headers = HTTPHeaders()
            headers.add(name: "Content-Type", value: "text/plain; version=0.0.4")
            return HTTPResponse(status: 200, headers: headers, body: Data(await environment.metrics.render().utf8))
        }
        addVisitRoutes(to: &router)
        addDeviceRoutes(to: &router)
        addKeyRoutes(to: &router)
        addOpsRoutes(to: &router)
        return router
    }

    // MARK: authentication

    /// The caller behind `Authorization: Bearer <key>`, or 401.
    func authenticate(_ request: HTTPRequest) async throws -> Caller {
        guard let header = request.headers["authorization"] else { throw APIError.unauthorized }
        let parts = header.utf8.split(separator: UInt8(ascii: " "), maxSplits: 1)
        guard parts.count == 2, parts[0].count == 6, String(decoding: parts[0], as: UTF8.self).lowercased() == "bearer"
        else { throw APIError.unauthorized }
        // Per request: trim spaces and tabs by hand (Foundation's trimming costs more than the rest of this).
        let blank: (UInt8) -> Bool = { $0 == UInt8(ascii: " ") || $0 == UInt8(ascii: "\t") }
        let trimmed = parts[1].drop(while: blank).reversed().drop(while: blank).reversed()
        guard let (keyId, secret) = APIKeys.parse(String(decoding: trimmed, as: UTF8.self)) else { throw APIError.unauthorized }
        let cache = environment.keyCache
        var stored = cache.key(keyId)
        if stored == nil {
            let generation = cache.generation()
            stored = try await mapped { try await environment.pool.withConnection { try APIKeys.lookup(keyId: keyId, on: $0) } }
            if let stored { cache.remember(stored, readAt: generation) }
        }
        guard let caller = stored?.caller(presenting: secret) else { throw APIError.unauthorized }
        LiveVisitsAPI.currentCaller?.set(role: caller.role.rawValue)
        return caller
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

    /// `/readyz`: the database answers and every migration is applied.
    func readiness() async -> HTTPResponse {
        do {
            let pending = try await environment.migrator.pending(pool: environment.pool)
            guard pending.isEmpty else {
                return .error(status: 503, code: "migrations_pending", message: "pending migrations: \(pending.joined(separator: ", "))")
            }
            return .json(body: Data(#"{"status":"ready"}"#.utf8))
        } catch let error as Migrator.MigrationError {
            return .error(status: 503, code: "migrations_changed", message: error.message)
        } catch {
            return .error(status: 503, code: "unavailable", message: "the database is unreachable")
        }
    }

    // MARK: command transactions

    /// What a write answers: status, JSON body, optional ETag; and, for this run only (never stored with
    /// the answer), what it left for others to pick up after the commit.
    struct Answer: Sendable {
        var status: Int
        var body: String
        var etag: String?
        /// Events the write appended: counted and announced to the followers.
        var eventsAppended = 0
        /// Whether the write enqueued deliveries: the outbox workers are woken.
        var enqueuedPushes = false

        var response: HTTPResponse {
            var headers = HTTPHeaders()
            if let etag { headers.add(name: "ETag", value: etag) }
            if body.isEmpty { return HTTPResponse(status: status, headers: headers) }
            return .json(status: status, body: Data(body.utf8), headers: headers)
        }

        init(status: Int, body: String, etag: String? = nil, eventsAppended: Int = 0, enqueuedPushes: Bool = false) {
            self.status = status
            self.body = body
            self.etag = etag
            self.eventsAppended = eventsAppended
            self.enqueuedPushes = enqueuedPushes
        }

        init(error: APIError) {
            status = error.httpStatus
            body = String(decoding: HTTPResponse.error(status: error.httpStatus, code: error.httpCode, message: error.httpMessage).body, as: UTF8.self)
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
        var work: @Sendable (PostgresConnection) throws -> Answer

        init(
            retryOnConflict: Bool = false, unkeyed: (@Sendable () async throws -> Answer)? = nil,
            keyed: (@Sendable (IdempotencyClaim) async throws -> Answer)? = nil,
            _ work: @escaping @Sendable (PostgresConnection) throws -> Answer
        ) {
            self.retryOnConflict = retryOnConflict
            self.unkeyed = unkeyed
            self.keyed = keyed
            self.work = work
        }
    }

    /// An `Idempotency-Key` about to be used for the first time: its scope (the calling key and the route)
    /// and the request body it is kept with.
    struct IdempotencyClaim: Sendable {
        let keyId: String
        let route: String
        let key: String
        let body: String

        /// A row when the key is taken already (a retry): read before the command is decided, so a retry
        /// is refused alone instead of failing the group-commit batch it would have joined.
        var takenStatement: PostgresQuery {
            "SELECT 1 FROM http_idempotency WHERE key_id = \(keyId) AND route = \(route) AND idempotency_key = \(key)"
        }

        /// Stores a visit command's answer under the key, from the read-model row the same transaction just
        /// wrote (the view, the live activities, the version for the ETag), and returns it: so the stored
        /// answer and the one given are the same text. A key taken between `takenStatement` and this (a
        /// concurrent first try) fails the statement (its primary key), and with it the batch, which is
        /// then run again command by command.
        func storeAnswerStatement(visitId: String) -> PostgresQuery {
            """
            INSERT INTO http_idempotency (key_id, route, idempotency_key, request_body, status, response_body, response_etag)
            SELECT \(keyId), \(route), \(key), \(body), 201,
                   left(v.view, -1) || ',"liveActivities":' ||
                   (SELECT count(*) FROM live_activities la WHERE la.visit_id = v.visit_id AND la.retired_at_ms IS NULL) || '}',
                   '"' || v.version || '"'
            FROM visits v WHERE v.visit_id = \(visitId)
            RETURNING response_body, response_etag
            """
        }
    }

    /// Runs a write route for an authenticated caller. `prepare` checks the request (role, path ids,
    /// headers, body) and says what to write. With an `Idempotency-Key`, the request's first answer is
    /// stored under the key in the write's transaction — a refusal from `prepare` or from the write, 4xx
    /// included, 503 not — and a retry with equal JSON gets it back; another body gets 409. A malformed
    /// key answers 400 and nothing is stored. Without a key, nothing is stored and no statement is added:
    /// `prepare`'s refusal is answered at once, and `unkeyed` (when given) runs instead of `work`.
    /// Lost version races are retried when the write allows it.
    func write(_ request: HTTPRequest, caller: Caller, _ prepare: () throws -> Write) async throws -> HTTPResponse {
        let key = try RequestChecks.idempotencyKey(request.headers["idempotency-key"])
        let write: Write
        do {
            write = try prepare()
        } catch {
            guard let refusal = APIError.map(error) else { throw error }
            guard key != nil, (400..<500).contains(refusal.httpStatus) else { throw refusal }
            // Refused before any work: kept as the key's first answer like a refusal from the write itself.
            write = Write { _ in throw refusal }
        }
        let route = key == nil ? "" : "\(request.method) \(request.rawPath)"
        let body = key == nil ? "" : LiveVisitsAPI.storedBody(request.body)
        if let key, let keyed = write.keyed {
            do {
                let answer = try await keyed(IdempotencyClaim(keyId: caller.keyId, route: route, key: key, body: body))
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
        var attempt = 0
        while true {
            attempt += 1
            do {
                if key == nil, let unkeyed = write.unkeyed {
                    let answer = try await unkeyed()
                    committed(answer)
                    return answer.response
                }
                let answer = try await environment.pool.withTransaction { c -> Answer in
                    guard let key else { return try write.work(c) }
                    let claimed = try !c.query("""
                        INSERT INTO http_idempotency (key_id, route, idempotency_key, request_body)
                        VALUES (\(caller.keyId), \(route), \(key), \(body))
                        ON CONFLICT DO NOTHING RETURNING 1
                        """).isEmpty
                    if !claimed {
                        return try LiveVisitsAPI.storedAnswer(keyId: caller.keyId, route: route, key: key, body: body, on: c)
                    }
                    try c.execute(script: "SAVEPOINT command")
                    var answer: Answer
                    do {
                        answer = try write.work(c)
                        try c.execute(script: "RELEASE SAVEPOINT command")
                    } catch {
                        guard let api = APIError.map(error), api.httpStatus != 503 else { throw error }
                        if write.retryOnConflict, (error as? EventStoreError)?.code == .wrongExpectedVersion { throw error }
                        try c.execute(script: "ROLLBACK TO SAVEPOINT command")
                        answer = Answer(error: api)
                    }
                    try c.query("""
                        UPDATE http_idempotency SET status = \(answer.status), response_body = \(answer.body), response_etag = \(answer.etag)
                        WHERE key_id = \(caller.keyId) AND route = \(route) AND idempotency_key = \(key)
                        """)
                    return answer
                }
                committed(answer)
                return answer.response
            } catch let error as EventStoreError where error.code == .wrongExpectedVersion && write.retryOnConflict && attempt < 50 {
                try await Task.sleep(nanoseconds: UInt64.random(in: 0...UInt64(min(attempt, 10)) * 2_000_000))
                continue
            } catch {
                if let api = APIError.map(error) { throw api }
                throw error
            }
        }
    }

    /// After a write committed: count the events it appended and wake the followers, and wake the outbox
    /// workers when it enqueued deliveries. A stored answer or a refusal did neither.
    private func committed(_ answer: Answer) {
        if answer.eventsAppended > 0 { environment.store.eventsCommitted(count: answer.eventsAppended) }
        if answer.enqueuedPushes { environment.pushes.committed() }
    }

    /// The request body as kept under an idempotency key. A raw NUL cannot travel as a text parameter
    /// (libpq would cut the body there); it is never valid JSON, so such a body is only compared as text,
    /// with the same stand-in on both sides.
    static func storedBody(_ bytes: Data) -> String {
        let text = String(decoding: bytes, as: UTF8.self)
        return text.contains("\u{0}") ? text.replacingOccurrences(of: "\u{0}", with: "\u{FFFD}") : text
    }

    static func storedAnswer(keyId: String, route: String, key: String, body: String, on c: PostgresConnection) throws -> Answer {
        guard let row = try c.query("""
            SELECT request_body, status, response_body, response_etag FROM http_idempotency
            WHERE key_id = \(keyId) AND route = \(route) AND idempotency_key = \(key)
            """).first, let status = row["status"].flatMap({ Int($0) })
        else {
            throw APIError(409, "idempotency_key_in_use", "a request with this Idempotency-Key is still being processed")
        }
        let first = try? JSONValue.parse(Array(row["request_body"]!.utf8))
        let again = try? JSONValue.parse(Array(body.utf8))
        let same = (first != nil && again != nil) ? first == again : row["request_body"] == body
        guard same else {
            throw APIError(409, "idempotency_key_reused", "this Idempotency-Key was used with another request body")
        }
        return Answer(status: status, body: row["response_body"] ?? "", etag: row["response_etag"])
    }
}

/// The authenticated role of one request, for its log line (never the key).
final class CallerRecord: Sendable {
    private let value = Mutex<String?>(nil)
    var role: String? { value.withLock { $0 } }
    func set(role: String) { value.withLock { $0 = role } }
}
