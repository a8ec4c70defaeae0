import JSON

/// One request as the simulator received and answered it (accepted or not).
///
/// The provider token itself is never kept: `providerToken` holds its `kid`, `iss` and `iat`, and
/// `headers` omits `authorization`.
public struct SimulatedDelivery: Sendable, Equatable {
    /// Order of arrival, from 1, across all connections (a reset does not restart it).
    public var sequence: Int
    /// When the request was complete (clock seconds since 1970).
    public var receivedAt: Double
    /// Which TLS connection carried it (from 1, in accept order).
    public var connectionID: Int
    /// The HTTP/2 stream id.
    public var streamID: Int32
    /// `:method`.
    public var method: String
    /// `:path`.
    public var path: String
    /// The device token from the path (`/3/device/<token>`), when the path has that shape.
    public var deviceToken: String?
    /// Regular request headers, lowercase names, in arrival order, without `authorization`.
    public var headers: [(name: String, value: String)]
    /// What the provider token said, when one was present and parseable.
    public var providerToken: ProviderTokenSummary?
    /// The body as received (lossy UTF-8), cut at 64 KiB.
    public var payload: String
    /// The body's size in bytes.
    public var payloadSize: Int
    /// The body parsed as JSON, when it is.
    public var json: JSONValue?
    /// HTTP status answered (0 when the connection was dropped instead).
    public var status: Int
    /// APNs reason answered (`nil` on success), or `ConnectionDropped` / `StreamClosed` when no answer went out.
    public var reason: String?
    /// The `apns-id` answered (the client's, or one generated).
    public var apnsID: String
    /// The `timestamp` of a 410 answer, milliseconds since 1970.
    public var unregisteredTimestamp: Int64?
    /// True when the answer was written to the connection.
    public var answered: Bool
    /// When the answer was handed to HTTP/2 (or abandoned), clock seconds since 1970.
    public var answeredAt: Double?
    /// The `apns-unique-id` answered: set on a push accepted by the sandbox listener only.
    public var uniqueID: String?

    /// Builds a record by hand (the simulator makes them; tests of printers may too).
    public init(
        sequence: Int, receivedAt: Double, connectionID: Int = 0, streamID: Int32 = 0, method: String = "POST",
        path: String, deviceToken: String?, headers: [(name: String, value: String)] = [],
        providerToken: ProviderTokenSummary? = nil, payload: String, payloadSize: Int? = nil, json: JSONValue? = nil,
        status: Int, reason: String? = nil, apnsID: String, unregisteredTimestamp: Int64? = nil, answered: Bool = true,
        answeredAt: Double? = nil, uniqueID: String? = nil
    ) {
        self.sequence = sequence
        self.receivedAt = receivedAt
        self.connectionID = connectionID
        self.streamID = streamID
        self.method = method
        self.path = path
        self.deviceToken = deviceToken
        self.headers = headers
        self.providerToken = providerToken
        self.payload = payload
        self.payloadSize = payloadSize ?? payload.utf8.count
        self.json = json ?? (try? JSONValue.parse(payload))
        self.status = status
        self.reason = reason
        self.apnsID = apnsID
        self.unregisteredTimestamp = unregisteredTimestamp
        self.answered = answered
        self.answeredAt = answeredAt
        self.uniqueID = uniqueID
    }

    public static func == (a: SimulatedDelivery, b: SimulatedDelivery) -> Bool {
        a.sequence == b.sequence && a.receivedAt == b.receivedAt && a.connectionID == b.connectionID
            && a.streamID == b.streamID && a.method == b.method && a.path == b.path && a.deviceToken == b.deviceToken
            && a.headers.count == b.headers.count && zip(a.headers, b.headers).allSatisfy { $0 == $1 }
            && a.providerToken == b.providerToken && a.payload == b.payload && a.payloadSize == b.payloadSize
            && a.json == b.json && a.status == b.status && a.reason == b.reason && a.apnsID == b.apnsID
            && a.unregisteredTimestamp == b.unregisteredTimestamp && a.answered == b.answered
            && a.answeredAt == b.answeredAt && a.uniqueID == b.uniqueID
    }

    /// The last value of header `name` (lowercase).
    public func header(_ name: String) -> String? {
        headers.last(where: { $0.name == name })?.value
    }

    /// The `aps` dictionary of the body, when present.
    public var aps: JSONValue? { json?["aps"] }

    /// True when the push was accepted (200).
    public var accepted: Bool { status == 200 }
}
