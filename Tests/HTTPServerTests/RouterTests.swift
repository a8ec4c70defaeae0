import Foundation
import HTTPServer
import Testing

@Suite(.timeLimit(.minutes(2))) struct RouterTests {
    struct Conflict: HTTPErrorConvertible {
        var httpStatus: Int { 409 }
        var httpCode: String { "illegal_transition" }
        var httpMessage: String { "Not from this status." }
    }
    struct Unmapped: Error {}

    private func router() -> Router {
        var router = Router()
        router.add(.get, "/v1/visits/{id}") { _, p in HTTPResponse(status: 200, body: Data("id:\(p["id"]!)".utf8)) }
        router.add(.get, "/v1/visits/search") { _, _ in HTTPResponse(status: 200, body: Data("search".utf8)) }
        router.add(.post, "/v1/visits/{id}/events") { _, _ in throw Conflict() }
        router.add(.delete, "/v1/visits/{id}/events") { _, _ in throw Unmapped() }
        router.add(.put, "/v1/visits/{visit}/live-activities/{activity}") { _, p in
            HTTPResponse(status: 204, body: Data("\(p["visit"]!)|\(p["activity"]!)".utf8))
        }
        return router
    }

    private func run(_ method: HTTPMethod, _ path: String) async -> HTTPResponse {
        await router().handle(HTTPRequest(method: method, rawPath: path))
    }

    @Test func pathParametersAreDecodedSegments() async {
        let response = await run(.get, "/v1/visits/v%2F1%20x")
        #expect(String(decoding: response.body, as: UTF8.self) == "id:v/1 x")
        #expect(response.route == "/v1/visits/{id}")
        let two = await run(.put, "/v1/visits/v-1/live-activities/a-9")
        #expect(String(decoding: two.body, as: UTF8.self) == "v-1|a-9")
    }

    @Test func literalSegmentBeatsParameter() async {
        let response = await run(.get, "/v1/visits/search")
        #expect(String(decoding: response.body, as: UTF8.self) == "search")
        #expect(response.route == "/v1/visits/search")
    }

    @Test func unknownPathIs404AndWrongMethodIs405() async throws {
        let missing = await run(.get, "/v1/nothing")
        #expect(missing.status == 404)
        #expect(String(decoding: missing.body, as: UTF8.self).contains(#""code":"not_found""#))
        #expect(missing.route == nil)

        let wrong = await run(.patch, "/v1/visits/v-1/events")
        #expect(wrong.status == 405)
        #expect(wrong.headers["allow"] == "POST, DELETE")
        #expect(wrong.route == "/v1/visits/{id}/events")
        let json = try JSONSerialization.jsonObject(with: wrong.body) as? [String: [String: String]]
        #expect(json?["error"]?["code"] == "method_not_allowed")
    }

    @Test func emptySegmentDoesNotMatchParameter() async {
        #expect(await run(.get, "/v1/visits/").status == 404)
        #expect(await run(.get, "/v1/visits/a/").status == 404)
    }

    @Test func headFallsBackToGet() async {
        let response = await run(.head, "/v1/visits/v-2")
        #expect(response.status == 200)
        #expect(response.route == "/v1/visits/{id}")
    }

    @Test func thrownErrorsBecomeJSONErrors() async throws {
        let conflict = await run(.post, "/v1/visits/v-1/events")
        #expect(conflict.status == 409)
        #expect(conflict.headers["Content-Type"] == "application/json")
        #expect(
            String(decoding: conflict.body, as: UTF8.self)
                == #"{"error":{"code":"illegal_transition","message":"Not from this status."}}"#)
        let unmapped = await run(.delete, "/v1/visits/v-1/events")
        #expect(unmapped.status == 500)
        #expect(String(decoding: unmapped.body, as: UTF8.self).contains("internal_error"))
    }

    @Test func matchReportsWithoutRunning() {
        let router = router()
        guard case .found(let parameters) = router.match(method: .get, path: ["v1", "visits", "x"]) else {
            Issue.record("expected a match")
            return
        }
        #expect(parameters.template == "/v1/visits/{id}")
        #expect(parameters["id"] == "x")
        guard case .methodNotAllowed(let allowed) = router.match(method: .post, path: ["v1", "visits", "x"]) else {
            Issue.record("expected 405")
            return
        }
        #expect(allowed == [.get, .head])
    }

    @Test func templatesParse() {
        #expect(RouteTemplate("/v1/visits/{id}/events") != nil)
        #expect(RouteTemplate("/") != nil)
        #expect(RouteTemplate("v1") == nil)
        #expect(RouteTemplate("/v1/{id}/{id}") == nil)
        #expect(RouteTemplate("/v1/{}") == nil)
        #expect(RouteTemplate("/v1/a{id}") == nil)
    }
}
