import APIStores
import Foundation
import HTTPServer
import JSON
import Postgres
import VisitDomain

extension Caller {
    /// The caller that the `authentication` middleware resolved for the current request.
    @TaskLocal static var current: Caller?

    /// The current request's caller; 401 on a route wired without `authentication` (never the case).
    static func authenticated() throws -> Caller {
        guard let current else { throw APIError.unauthorized }
        return current
    }
}

/// An `Idempotency-Key` about to be used: its scope (the calling key and the route) and the request body it
/// is kept with. Bound by the `idempotency` middleware for the write the route performs.
struct IdempotencyClaim: Sendable {
    let scope: IdempotencyScope
    /// The body's digest as stored (`LiveVisitsAPI.storedBody`).
    let body: String
    /// The digest of the raw bytes, which rows stored before migration 0014 hold.
    var rawDigest: String? = nil

    @TaskLocal static var current: IdempotencyClaim?

    /// The key is taken (a retry, or a concurrent first request that committed first): what it holds.
    struct Taken: Error {
        let record: IdempotencyRecord?
    }
}

extension LiveVisitsAPI {
    /// Middleware: the caller behind `Authorization: Bearer <key>` (else 401), bound as `Caller.current` for
    /// the rest of the route, and its role named on the request's log line.
    var authentication: RouteMiddleware {
        { request, parameters, next in
            let caller = try await authenticate(request)
            return try await Caller.$current.withValue(caller) { try await next(request, parameters) }
        }
    }

    /// Middleware of the write routes (contract §6, "Idempotency"): a request with an `Idempotency-Key`
    /// (malformed: 400, nothing stored) runs with its claim bound (`IdempotencyClaim.current`), scoped to the
    /// calling key and the route; the write stores its first answer in its own transaction (`perform`). A
    /// key found taken is answered here: the stored answer again when the body is equal JSON, else 409.
    var idempotency: RouteMiddleware {
        { request, parameters, next in
            guard let key = try RequestChecks.idempotencyKey(request.headers["idempotency-key"]) else {
                return try await next(request, parameters)
            }
            let caller = try Caller.authenticated()
            let claim = IdempotencyClaim(
                scope: IdempotencyScope(keyId: caller.keyId, route: "\(request.method) \(request.rawPath)", key: key),
                body: LiveVisitsAPI.storedBody(request.body), rawDigest: LiveVisitsAPI.rawDigest(request.body))
            do {
                return try await IdempotencyClaim.$current.withValue(claim) { try await next(request, parameters) }
            } catch let taken as IdempotencyClaim.Taken {
                return try LiveVisitsAPI.replay(taken.record, for: claim).response
            }
        }
    }

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

    /// The answer to a request whose key is taken: the first answer when the bodies are equal JSON, else 409.
    static func replay(_ record: IdempotencyRecord?, for claim: IdempotencyClaim) throws -> Answer {
        guard let record, let answer = record.answer else {
            throw APIError(.idempotencyKeyInUse, "a request with this Idempotency-Key is still being processed")
        }
        let same = record.requestBody == claim.body || record.requestBody == claim.rawDigest
        guard same else {
            throw APIError(.idempotencyKeyReused, "this Idempotency-Key was used with another request body")
        }
        return Answer(answer)
    }

    /// The request body as kept under an idempotency key: `sha256:` and the hex SHA-256 of its JSON written
    /// canonically (members sorted by key, one writer), so a retry of equal JSON matches whatever its spacing
    /// or member order, and the table never holds the body itself (a `POST /v1/visits` body carries the
    /// customer's name and address). A body that is not JSON is digested as its bytes.
    static func storedBody(_ bytes: Data) -> String {
        guard let json = try? JSONValue.parse(Array(bytes)) else { return digest(Array(bytes)) }
        return digest(canonical(json).serialized())
    }

    /// The digest of the body's bytes as sent (how migration 0014 digested the bodies stored before it).
    static func rawDigest(_ bytes: Data) -> String { digest(Array(bytes)) }

    static func digest(_ bytes: [UInt8]) -> String {
        "sha256:" + APIKeys.sha256Hex(bytes)
    }

    static func canonical(_ value: JSONValue) -> JSONValue {
        switch value {
        case .object(let members):
            return .object(members.sorted { $0.key < $1.key }.map { JSONMember($0.key, canonical($0.value)) })
        case .array(let items): return .array(items.map(canonical))
        default: return value
        }
    }
}
