import APIStores
import Foundation
import HTTPServer
import JSON
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

extension IdempotencyClaim {
    /// The claim the `idempotency` middleware bound for the current request's write.
    @TaskLocal static var current: IdempotencyClaim?
}

extension LiveVisitsAPI {
    /// Middleware: the caller behind `Authorization: Bearer <key>` (else 401), bound as `Caller.current` for
    /// the rest of the route, and its role named on the request's log line. A request over the limits
    /// (`RequestLimits`: its key's rate, its address locked out) answers 429 `rate_limited` with
    /// `Retry-After`.
    var authentication: RouteMiddleware {
        { request, parameters, next in
            let caller: Caller
            do {
                caller = try await authenticate(request)
            } catch let limited as RateLimited {
                return limited.response
            }
            return try await Caller.$current.withValue(caller) { try await next(request, parameters) }
        }
    }

    /// A request refused by `RequestLimits`: 429 with `Retry-After`, said by `authentication`.
    struct RateLimited: Error {
        let retryAfterSeconds: Int
        let message: String

        /// 429 `rate_limited` with `Retry-After`.
        var response: HTTPResponse {
            var headers = HTTPHeaders()
            headers.add(name: "Retry-After", value: String(retryAfterSeconds))
            return .error(status: 429, code: "rate_limited", message: message, headers: headers)
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
                requestBody: request.body)
            do {
                return try await IdempotencyClaim.$current.withValue(claim) { try await next(request, parameters) }
            } catch let taken as IdempotencyClaim.Taken {
                return try LiveVisitsAPI.replay(taken.record, for: claim).response
            }
        }
    }

    /// The caller behind `Authorization: Bearer <key>`, or 401; `RateLimited` when the request's address is
    /// locked out (its key is then not looked at) or its key is over its rate. Every key refused counts as a
    /// failed authentication of the request's address.
    func authenticate(_ request: HTTPRequest) async throws -> Caller {
        guard let header = request.headers["authorization"] else { throw APIError.unauthorized }
        let address = request.peerAddress
        if let lockout = environment.lockout, let address, let wait = lockout.lockedOut(address, now: environment.clock.now()) {
            throw RateLimited(
                retryAfterSeconds: RequestLimits.retryAfterSeconds(wait),
                message: "too many failed authentications from this address; retry later")
        }
        do {
            let caller = try await caller(presenting: header)
            LiveVisitsAPI.currentCaller?.set(role: caller.role.rawValue)
            if let limiter = environment.rateLimiter, let wait = limiter.admit(caller.keyId, now: environment.clock.now()) {
                throw RateLimited(
                    retryAfterSeconds: RequestLimits.retryAfterSeconds(wait),
                    message: "more than \(limiter.requestsPerSecond) requests a second with this key; retry later")
            }
            return caller
        } catch let refusal as APIError where refusal.code == .unauthorized {
            if let lockout = environment.lockout, let address { lockout.recordFailure(address, now: environment.clock.now()) }
            throw refusal
        }
    }

    /// The caller behind an `Authorization` header's value, or 401.
    private func caller(presenting header: String) async throws -> Caller {
        let parts = header.utf8.split(separator: UInt8(ascii: " "), maxSplits: 1)
        guard parts.count == 2, parts[0].count == 6, String(decoding: parts[0], as: UTF8.self).lowercased() == "bearer"
        else { throw APIError.unauthorized }
        // Per request: trim spaces and tabs by hand (Foundation's trimming costs more than the rest of this).
        let blank: (UInt8) -> Bool = { $0 == UInt8(ascii: " ") || $0 == UInt8(ascii: "\t") }
        let trimmed = parts[1].drop(while: blank).reversed().drop(while: blank).reversed()
        let presented = String(decoding: trimmed, as: UTF8.self)
        let keys = environment.keys
        guard let caller = try await mapped({ try await keys.caller(presenting: presented) }) else {
            throw APIError.unauthorized
        }
        return caller
    }

    /// The answer to a request whose key is taken: the first answer when the bodies are equal JSON, else 409.
    static func replay(_ record: IdempotencyRecord?, for claim: IdempotencyClaim) throws -> Answer {
        guard let record, let answer = record.answer else {
            throw APIError(.idempotencyKeyInUse, "a request with this Idempotency-Key is still being processed")
        }
        guard claim.matches(record) else {
            throw APIError(.idempotencyKeyReused, "this Idempotency-Key was used with another request body")
        }
        return Answer(answer)
    }
}
