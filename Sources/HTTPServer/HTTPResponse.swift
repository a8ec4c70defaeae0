import Foundation
import JSON

/// What a handler answers: a status, header fields and a body.
public struct HTTPResponse: Sendable {
    /// The status code, for example 200.
    public var status: Int
    /// Header fields to send. `Content-Length` and `Transfer-Encoding` are the server's and are dropped.
    public var headers: HTTPHeaders
    /// The body (not sent for `HEAD` requests and for 204/304).
    public var body: Data
    /// The route template that produced this response (`/v1/visits/{id}`), set by `Router`.
    /// Used for the request's log line and metrics; never sent to the client.
    public var route: String?
    /// Extra fields for the request's log line (`actor.role`, `visit.id`), never sent to the client.
    /// Never put a key, token or body here. The server's own `http.*` fields win over these.
    public var logMetadata: [String: String] = [:]

    /// A response; statuses outside 200…599 are sent as 500.
    public init(status: Int = 200, headers: HTTPHeaders = HTTPHeaders(), body: Data = Data(), route: String? = nil) {
        self.status = status
        self.headers = headers
        self.body = body
        self.route = route
    }

    /// A response with a JSON body already encoded.
    public static func json(status: Int = 200, body: Data, headers: HTTPHeaders = HTTPHeaders()) -> HTTPResponse {
        var headers = headers
        headers.replaceOrAdd(name: "Content-Type", value: "application/json")
        return HTTPResponse(status: status, headers: headers, body: body)
    }

    /// A response whose body is `value` written by the one JSON writer (members in their order).
    public static func json(status: Int = 200, _ value: JSONValue, headers: HTTPHeaders = HTTPHeaders()) -> HTTPResponse {
        json(status: status, body: Data(value.serialized()), headers: headers)
    }

    /// The contract's error shape: `{"error":{"code":"…","message":"…"}}`, with `"field"` naming the body's
    /// field at fault when there is one (`invalid_id`).
    public static func error(
        status: Int, code: String, message: String, field: String? = nil, headers: HTTPHeaders = HTTPHeaders()
    ) -> HTTPResponse {
        json(status: status, body: ErrorBody.render(code: code, message: message, field: field), headers: headers)
    }
}

/// The one place that renders the JSON error shape.
enum ErrorBody {
    static func render(code: String, message: String, field: String?) -> Data {
        var members = [JSONMember("code", .string(code)), JSONMember("message", .string(message))]
        if let field { members.append(JSONMember("field", .string(field))) }
        return Data(JSONValue.object([JSONMember("error", .object(members))]).serialized())
    }
}
