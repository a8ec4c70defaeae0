import Foundation
import HTTPServer
import JSON

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

    /// Written by the one JSON writer, read back by `JSONDecoder` (an independent reader) in `decodeEcho`.
    var json: JSONValue {
        func optional(_ text: String?) -> JSONValue { text.map(JSONValue.string) ?? .null }
        return [
            "method": .string(method), "rawPath": .string(rawPath), "segments": .array(segments.map(JSONValue.string)),
            "query": .array(query.map { .array($0.map(JSONValue.string)) }),
            "parameters": .object(parameters.sorted { $0.key < $1.key }.map { JSONMember($0.key, .string($0.value)) }),
            "testHeader": optional(testHeader), "bodyBytes": .number(Double(bodyBytes)), "body": .string(body),
            "remoteAddress": optional(remoteAddress), "requestID": .string(requestID),
        ]
    }
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
        return .json(echo.json)
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
