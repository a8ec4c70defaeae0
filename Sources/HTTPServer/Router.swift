import Runtime

/// Answers one routed request; a thrown `HTTPErrorConvertible` becomes its JSON error.
public typealias RouteHandler = @Sendable (HTTPRequest, RouteParameters) async throws -> HTTPResponse

/// Runs around a route's handler (authentication, idempotency …): answers by itself, or calls `next` — the
/// rest of the chain, then the handler — and may change what it answers. What it throws is answered like a
/// handler's error. Values for the handler travel in task-local values bound around `next`.
public typealias RouteMiddleware = @Sendable (HTTPRequest, RouteParameters, _ next: RouteHandler) async throws -> HTTPResponse

/// Maps method + path template to a handler.
///
/// - No template fits the path: 404 `not_found`.
/// - A template fits but not for this method: 405 `method_not_allowed` with an `Allow` header.
/// - `HEAD` falls back to the `GET` route (the server sends no body for HEAD).
/// - Every response carries the matched template in `HTTPResponse.route` for logs and metrics.
/// - A route may run through middleware, the first given outermost (`add(_:_:through:_:)`).
///
/// ```swift
/// var router = Router()
/// router.add(.post, "/v1/visits/{id}/events") { request, params in
///     let visitID = params["id"]!
///     …
/// }
/// let server = try HTTPServer(configuration: config, handler: router.handler)
/// ```
public struct Router: Sendable {
    private struct Route: Sendable {
        let method: HTTPMethod
        let template: RouteTemplate
        let handler: RouteHandler
    }

    /// Where a route's unmapped error is logged (with the request id, never the request's content).
    public var logger: Logger
    private var routes: [Route] = []

    /// An empty router; unmapped handler errors are logged with `logger`.
    public init(logger: Logger = Logger(label: "http.router")) {
        self.logger = logger
    }

    /// Adds a route. A template that does not parse is a programming error and traps.
    public mutating func add(_ method: HTTPMethod, _ template: String, _ handler: @escaping RouteHandler) {
        guard let parsed = RouteTemplate(template) else {
            preconditionFailure("invalid route template \(template)")
        }
        precondition(
            !routes.contains { $0.method == method && $0.template == parsed }, "route \(method) \(template) added twice")
        routes.append(Route(method: method, template: parsed, handler: handler))
    }

    /// Adds a route whose handler runs inside `middleware`, the first outermost: `through: [a, b]` runs
    /// `a`, which calls `b`, which calls `handler`.
    public mutating func add(
        _ method: HTTPMethod, _ template: String, through middleware: [RouteMiddleware], _ handler: @escaping RouteHandler
    ) {
        add(method, template, Router.chain(middleware, handler))
    }

    /// `handler` wrapped in `middleware`, the first outermost.
    public static func chain(_ middleware: [RouteMiddleware], _ handler: @escaping RouteHandler) -> RouteHandler {
        middleware.reversed().reduce(handler) { next, outer in
            { request, parameters in try await outer(request, parameters, next) }
        }
    }

    /// The outcome of matching a request, without running anything.
    public enum Match: Sendable {
        /// A route fits: its template and parameters.
        case found(RouteParameters)
        /// The path fits templates, but none for this method: the methods allowed.
        case methodNotAllowed(allowed: [HTTPMethod])
        /// No template fits the path.
        case notFound
    }

    /// Finds the route for a method and decoded path segments.
    public func match(method: HTTPMethod, path: [String]) -> Match {
        switch find(method: method, path: path) {
        case .found(let route, let values): .found(RouteParameters(template: route.template.text, values: values))
        case .methodNotAllowed(let allowed, _): .methodNotAllowed(allowed: allowed)
        case .notFound: .notFound
        }
    }

    private enum Lookup {
        case found(Route, [String: String])
        case methodNotAllowed([HTTPMethod], template: String)
        case notFound
    }

    private func find(method: HTTPMethod, path: [String]) -> Lookup {
        var fitting: [(Route, [String: String])] = []
        for route in routes {
            if let values = route.template.match(path) { fitting.append((route, values)) }
        }
        guard !fitting.isEmpty else { return .notFound }
        func best(_ method: HTTPMethod) -> (Route, [String: String])? {
            var chosen: (Route, [String: String])?
            for candidate in fitting where candidate.0.method == method {
                if let current = chosen, !candidate.0.template.isMoreSpecific(than: current.0.template) { continue }
                chosen = candidate
            }
            return chosen
        }
        if let hit = best(method) ?? (method == .head ? best(.get) : nil) {
            return .found(hit.0, hit.1)
        }
        var allowed: [HTTPMethod] = []
        for (route, _) in fitting where !allowed.contains(route.method) { allowed.append(route.method) }
        if allowed.contains(.get) && !allowed.contains(.head) { allowed.append(.head) }
        return .methodNotAllowed(allowed, template: fitting[0].0.template.text)
    }

    /// Routes and runs a request; never throws: errors become JSON error responses.
    public func handle(_ request: HTTPRequest) async -> HTTPResponse {
        switch find(method: request.method, path: request.pathSegments) {
        case .notFound:
            return .error(status: 404, code: "not_found", message: "No such resource.")
        case .methodNotAllowed(let allowed, let template):
            var response = HTTPResponse.error(
                status: 405, code: "method_not_allowed",
                message: "This resource does not accept \(Router.safeMethod(request.method)).",
                headers: ["Allow": allowed.map(\.rawValue).joined(separator: ", ")])
            response.route = template
            return response
        case .found(let route, let values):
            var response: HTTPResponse
            do {
                response = try await route.handler(request, RouteParameters(template: route.template.text, values: values))
            } catch let error as HTTPErrorConvertible {
                response = .error(
                    status: error.httpStatus, code: error.httpCode, message: error.httpMessage, field: error.httpField)
            } catch is CancellationError {
                response = .error(status: 503, code: "timeout", message: "The request took too long to process; try again.")
            } catch {
                logger.error(
                    "unmapped error in handler",
                    ["http.request_id": request.id, "http.route": route.template.text, "error.type": "\(type(of: error))"])
                response = .error(status: 500, code: "internal_error", message: "The server could not handle the request.")
            }
            response.route = route.template.text
            return response
        }
    }

    /// The router as the server's handler.
    public var handler: HTTPHandler {
        let router = self
        return { await router.handle($0) }
    }

    /// A method name fit for a message: known tokens only.
    private static func safeMethod(_ method: HTTPMethod) -> String {
        HTTPServer.methodLabel(method.rawValue) == "other" ? "this method" : method.rawValue
    }
}
