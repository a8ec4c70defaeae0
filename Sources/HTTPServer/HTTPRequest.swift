import Foundation

/// A fully received HTTP request, as the server hands it to a handler.
public struct HTTPRequest: Sendable {
    /// The method as sent.
    public var method: HTTPMethod
    /// The path as sent, still percent-encoded, without the query string (`/v1/visits/a%2Fb`).
    public var rawPath: String
    /// The path split on `/` and percent-decoded (`["v1", "visits", "a/b"]`); `/` alone gives `[]`.
    public var pathSegments: [String]
    /// The query string's items in order, percent-decoded.
    public var queryItems: [HTTPQueryItem]
    /// The request's header fields.
    public var headers: HTTPHeaders
    /// The request body (at most the server's `maxBodyBytes`).
    public var body: Data
    /// The peer as `ip:port` (`[ip]:port` for IPv6), when known.
    public var remoteAddress: String?
    /// The request id echoed as `X-Request-Id` and written in the request's log line.
    public var id: String
    /// The HTTP version, for example `HTTP/1.1`.
    public var version: String

    /// A request as the server builds it; tests and in-process callers make their own.
    /// `pathSegments` defaults to the decoded `rawPath` (empty when it does not decode).
    public init(
        method: HTTPMethod, rawPath: String, pathSegments: [String]? = nil, queryItems: [HTTPQueryItem] = [],
        headers: HTTPHeaders = HTTPHeaders(), body: Data = Data(), remoteAddress: String? = nil,
        id: String = RequestID.generate(), version: String = "HTTP/1.1"
    ) {
        self.method = method
        self.rawPath = rawPath
        self.pathSegments = pathSegments ?? (PercentDecoding.pathSegments(rawPath) ?? [])
        self.queryItems = queryItems
        self.headers = headers
        self.body = body
        self.remoteAddress = remoteAddress
        self.id = id
        self.version = version
    }

    /// The value of the first query item named `name`, or nil (also nil for a bare `?name`).
    public func queryValue(_ name: String) -> String? {
        queryItems.first { $0.name == name }?.value
    }
}
