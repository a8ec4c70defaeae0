import APIStores
import Foundation
import HTTPServer
import JSON
import VisitDomain
import WebConsole

extension LiveVisitsAPI {
    func addTrackingRoutes(to router: inout Router) {
        // Not `idempotent`: a kept answer would hold the token, which is stored nowhere but as its hash. A
        // repeated POST makes another link, which replaces the first.
        router.add(
            .post, "/v1/visits/{id}/tracking-link", through: authenticated,
            LiveVisitsAPI.withCaller { _, params, caller in
                try await createTrackingLink(id: params["id"], caller: caller)
            })
        router.add(
            .delete, "/v1/visits/{id}/tracking-link", through: authenticated,
            LiveVisitsAPI.withCaller { _, params, caller in
                try await revokeTrackingLink(id: params["id"], caller: caller)
            })
        router.add(.get, "/track/{token}/state") { request, params in
            await trackingState(request, token: params["token"] ?? "")
        }
        router.add(.get, "/track/{token}") { request, params in
            await trackingPage(request, token: params["token"] ?? "")
        }
        TrackingPage.addRoutes(to: &router)
    }

    /// Where requests are held: the tracking pages' connections, served by threads of their own
    /// (`HTTPServerConfiguration.holdingPathPrefixes`), so that ten thousand held pages cost the other requests
    /// nothing.
    public static let holdingPathPrefixes = ["/track/"]

    /// Whether the caller may make or revoke a visit's tracking link: dispatchers and ops for any visit, a
    /// customer for their own (another's visit is not found, as everywhere a customer asks for one).
    private static func mayLink(_ caller: Caller, _ seen: TrackingLinks.VisitSeen) -> Bool {
        maySee(caller, customerId: seen.customerId, technicianId: seen.technicianId)
    }

    private static func requireLinkRole(_ caller: Caller) throws {
        guard caller.role != .technician else { throw APIError.forbidden("a technician key may not make tracking links") }
    }

    /// `POST /v1/visits/{id}/tracking-link` (dispatcher, ops, the visit's customer): a new link, replacing
    /// the visit's old one; 409 `visit_ended` once the visit has ended. `expiresAt` is null: a link lapses an
    /// hour after its visit ends, which has not happened yet.
    func createTrackingLink(id: String?, caller: Caller) async throws -> HTTPResponse {
        try LiveVisitsAPI.requireLinkRole(caller)
        let visitId = try RequestChecks.id(id, name: "visit")
        let links = environment.trackingLinks
        let now = environment.clock.now()
        let made = try await mapped {
            try await links.create(visitId: visitId, now: now) { LiveVisitsAPI.mayLink(caller, $0) }
        }
        switch made {
        case .notFound:
            throw APIError.notFound("visit")
        case .ended(let status):
            throw APIError(.visitEnded, "the visit has ended (\(status)): it has no tracking link")
        case .created(let token):
            logger.info("tracking link made", ["visit.id": visitId, "actor.key_id": caller.keyId])
            return .json(
                status: 201,
                .object([JSONMember("url", .string("/track/\(token)")), JSONMember("expiresAt", .null)]))
        }
    }

    /// `DELETE /v1/visits/{id}/tracking-link`: the visit's link stops working (204 whether it had one or not).
    func revokeTrackingLink(id: String?, caller: Caller) async throws -> HTTPResponse {
        try LiveVisitsAPI.requireLinkRole(caller)
        let visitId = try RequestChecks.id(id, name: "visit")
        let links = environment.trackingLinks
        let found = try await mapped { try await links.revoke(visitId: visitId) { LiveVisitsAPI.mayLink(caller, $0) } }
        guard found else { throw APIError.notFound("visit") }
        logger.info("tracking link revoked", ["visit.id": visitId, "actor.key_id": caller.keyId])
        return HTTPResponse(status: 204)
    }

    /// The outcome of presenting a token: what the link shows, or why not.
    enum TrackingLookup {
        case found(TrackingLinks.Shown)
        case notFound
        case limited(HTTPResponse)
        case unavailable
    }

    /// Looks a presented token up. An address locked out by failed authentications — failed lookups count as
    /// such — is answered 429 without a look; a lookup that finds nothing (unknown, revoked, lapsed) counts
    /// as a failure of the address. Every lookup is counted in `livevisits_tracking_lookups_total{result}`.
    func lookUpTracking(_ request: HTTPRequest, token: String) async -> TrackingLookup {
        let address = request.peerAddress
        let lockout = environment.lockout
        if let lockout, let address, let wait = lockout.lockedOut(address, now: environment.clock.now()) {
            return .limited(
                RateLimited(
                    retryAfterSeconds: RequestLimits.retryAfterSeconds(wait),
                    message: "too many failed look-ups from this address; retry later"
                ).response)
        }
        let shown: TrackingLinks.Shown?
        do {
            shown = try await environment.trackingLinks.lookup(token: token, now: environment.clock.epochSeconds())
        } catch {
            return .unavailable
        }
        environment.metrics.increment(
            "livevisits_tracking_lookups_total", help: "Tracking link look-ups by result (found, not_found).",
            labels: ["result": shown == nil ? "not_found" : "found"])
        guard let shown else {
            if let lockout, let address { lockout.recordFailure(address, now: environment.clock.now()) }
            return .notFound
        }
        return .found(shown)
    }

    /// `GET /track/<token>/state` (no key): the card's JSON — the seven `ContentState` keys, `jobSummary`,
    /// `staleDate`, `dismissal`; never the address, the customer's name or an id. The sealed fields are opened
    /// on the way out like every answer's (`openPersonalData`: `null` once the customer is erased). Unknown,
    /// revoked and lapsed links get the same 404.
    ///
    /// The answer carries the card's version as its `ETag`: `If-None-Match` with it answers 304 without a body.
    /// `?after=<version>` (the ETag's number) asks for a change: while the card is still at that version the
    /// request is held (`TrackingCards.waitForChange`: no database connection, no thread) until it changes, the
    /// link stops working, or `TrackingCards.holdSeconds` pass (25 s), then answered as any other — so a page asks
    /// about once per change or per hold instead of once per poll.
    func trackingState(_ request: HTTPRequest, token: String) async -> HTTPResponse {
        var after: Int?
        if let text = request.queryValue("after") {
            guard let version = Int(text), version >= 0 else {
                var refused = HTTPResponse.error(
                    status: APIError.Code.invalidValue.httpStatus, code: APIError.Code.invalidValue.rawValue,
                    message: "after: expected a version (the ETag's number, 0 or more)")
                WebConsole.addSecurityHeaders(to: &refused.headers)
                return refused
            }
            after = version
        }
        var response: HTTPResponse
        switch await lookUpTracking(request, token: token) {
        case .limited(let answer): response = answer
        case .unavailable: response = LiveVisitsAPI.trackingUnavailable
        case .notFound: response = LiveVisitsAPI.trackingNotFound
        case .found(var shown):
            if after == shown.version {
                let links = environment.trackingLinks
                // Held past the server's request timeout: the hold ends by itself, a few seconds before this.
                RequestDeadline.current?.extend(toSecondsFromNow: links.holdSeconds + 5)
                await links.waitForChange(token: token, beyond: shown)
                do {
                    if let now = try await links.lookup(token: token, now: environment.clock.epochSeconds()) {
                        shown = now
                        response = LiveVisitsAPI.trackingAnswer(shown, request)
                    } else {
                        response = LiveVisitsAPI.trackingNotFound
                    }
                } catch {
                    response = LiveVisitsAPI.trackingUnavailable
                }
            } else {
                response = LiveVisitsAPI.trackingAnswer(shown, request)
            }
        }
        WebConsole.addSecurityHeaders(to: &response.headers)
        return response
    }

    static var trackingNotFound: HTTPResponse {
        .error(status: 404, code: "not_found", message: "this tracking link is not valid")
    }

    static var trackingUnavailable: HTTPResponse {
        .error(status: 503, code: "unavailable", message: APIError.unavailable.message)
    }

    /// The state's 200 with its ETag, or 304 without a body when the request's `If-None-Match` names it.
    static func trackingAnswer(_ shown: TrackingLinks.Shown, _ request: HTTPRequest) -> HTTPResponse {
        let etag = "\"\(shown.version)\""
        var response: HTTPResponse
        if let tags = request.headers["If-None-Match"],
            tags.split(separator: ",").contains(where: { $0.trimmingCharacters(in: .whitespaces) == etag })
        {
            response = HTTPResponse(status: 304)
        } else {
            response = .json(trackingJSON(shown))
        }
        response.headers.add(name: "ETag", value: etag)
        return response
    }

    /// `GET /track/<token>` (no key): the tracking page in the visit's language (its labels from the rules'
    /// texts for that language), or a 404 page saying the link has expired or is not valid.
    func trackingPage(_ request: HTTPRequest, token: String) async -> HTTPResponse {
        switch await lookUpTracking(request, token: token) {
        case .notFound: return TrackingPage.notFound()
        case .found(let shown):
            let locale = shown.state.locale
            let labels = environment.rules.localized(for: locale).trackingLabels
            return TrackingPage.found(
                language: locale?.text, rightToLeft: locale?.isRightToLeft ?? false,
                labels: labels.json.serializedString())
        case .limited(var answer):
            WebConsole.addSecurityHeaders(to: &answer.headers)
            return answer
        case .unavailable:
            var answer = HTTPResponse.error(status: 503, code: "unavailable", message: APIError.unavailable.message)
            WebConsole.addSecurityHeaders(to: &answer.headers)
            return answer
        }
    }

    /// The state answer of a link: the card's fields, and nothing that names the visit or the customer.
    static func trackingJSON(_ shown: TrackingLinks.Shown) -> JSONValue {
        guard case .object(var members) = shown.state.contentState.json else { return .null }
        members.append(JSONMember("jobSummary", .string(shown.state.attributes.jobSummary)))
        members.append(JSONMember("staleDate", shown.staleDate.map { .number(Double($0)) } ?? .null))
        members.append(JSONMember("dismissal", shown.dismissal?.json ?? .null))
        return .object(members)
    }
}
