import Foundation
import HTTPServer
import Testing

/// Middleware around a route: the first given runs outermost, each may answer by itself, and what it throws
/// is answered like a handler's error.
@Suite(.timeLimit(.minutes(1))) struct RouterMiddlewareTests {
    struct Refused: HTTPErrorConvertible {
        var httpStatus: Int { 401 }
        var httpCode: String { "unauthorized" }
        var httpMessage: String { "No key." }
    }

    @TaskLocal static var trail: String = ""

    /// Appends `name` to the trail seen by the rest of the chain, and to the answer on the way out.
    static func mark(_ name: String) -> RouteMiddleware {
        { request, parameters, next in
            var response = try await $trail.withValue(trail + name) { try await next(request, parameters) }
            response.body += Data("<\(name)".utf8)
            return response
        }
    }

    static let refuseWithoutKey: RouteMiddleware = { request, parameters, next in
        guard request.headers["authorization"] != nil else { throw Refused() }
        return try await next(request, parameters)
    }

    func router() -> Router {
        var router = Router()
        router.add(.get, "/v1/chain/{id}", through: [Self.mark("a"), Self.mark("b")]) { _, parameters in
            HTTPResponse(status: 200, body: Data("\(RouterMiddlewareTests.trail)>\(parameters["id"]!)".utf8))
        }
        router.add(.get, "/v1/guarded", through: [Self.refuseWithoutKey]) { _, _ in
            HTTPResponse(status: 200, body: Data("in".utf8))
        }
        return router
    }

    @Test func theFirstMiddlewareRunsOutermost() async {
        let response = await router().handle(HTTPRequest(method: .get, rawPath: "/v1/chain/x"))
        #expect(response.status == 200)
        #expect(String(decoding: response.body, as: UTF8.self) == "ab>x<b<a")
        #expect(response.route == "/v1/chain/{id}")
    }

    @Test func aMiddlewareMayAnswerAloneAndItsErrorIsRendered() async {
        let refused = await router().handle(HTTPRequest(method: .get, rawPath: "/v1/guarded"))
        #expect(refused.status == 401)
        #expect(String(decoding: refused.body, as: UTF8.self).contains("\"code\":\"unauthorized\""))
        #expect(refused.route == "/v1/guarded")
        var headers = HTTPHeaders()
        headers.add(name: "Authorization", value: "Bearer x")
        let admitted = await router().handle(HTTPRequest(method: .get, rawPath: "/v1/guarded", headers: headers))
        #expect(String(decoding: admitted.body, as: UTF8.self) == "in")
    }
}
