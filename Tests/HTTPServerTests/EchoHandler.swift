import Foundation
import HTTPServer

/// What the echo route saw, sent back as JSON.
struct Echo: Codable, Sendable {
    var method: String
    var rawPath: String
    var segments: [String]
    var query: [[String]]
    var parameters: [String: String]
    var testHeader: String?
    var bodyBytes: Int
    var body: String
    var remoteAddress: String?
    var requestID: String
}

/// A router with an echo route under a template, for the socket tests.
func echoRouter() -> Router {
    var router = Router()
    let echo: RouteHandler = { request, parameters in
        let echo = Echo(
            method: request.method.rawValue, rawPath: request.rawPath, segments: request.pathSegments,
            query: request.queryItems.map { [$0.name, $0.value ?? "<nil>"] }, parameters: parameters.values,
            testHeader: request.headers["x-test"], bodyBytes: request.body.count,
            body: String(decoding: request.body, as: UTF8.self), remoteAddress: request.remoteAddress,
            requestID: request.id)
        return try .json(echo)
    }
    router.add(.get, "/v1/visits/{id}", echo)
    router.add(.post, "/v1/visits/{id}/events", echo)
    router.add(.get, "/v1/visits/search", echo)
    router.add(.get, "/", echo)
    router.add(.get, "/json") { _, _ in .json(body: Data(#"{"ok":true}"#.utf8)) }
    return router
}

func decodeEcho(_ response: RawClient.Response) throws -> Echo {
    try JSONDecoder().decode(Echo.self, from: Data(response.body))
}
