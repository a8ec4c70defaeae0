/// How much one caller may ask of an API process: the per-key rate limit, the per-address lockout after
/// failed authentications, and how long `/readyz` reuses its answer. Each process counts on its own.
public struct RequestLimits: Sendable, Equatable {
    /// Requests a second one API key may make (`LIVEVISITS_RATE_LIMIT`), with bursts of twice as many;
    /// nil: no limit.
    public var requestsPerSecond: Int?
    /// Failed authentications (a wrong, unknown or revoked key) one client address may make within a
    /// minute (`LIVEVISITS_AUTH_FAILURE_LIMIT`) before its requests with a key answer 429 unchecked until
    /// the minute has passed; nil: no lockout.
    public var authenticationFailuresPerMinute: Int?
    /// How long `/readyz` answers from its last probe, in seconds (0: every call probes).
    public var readinessCacheSeconds: Double

    public init(requestsPerSecond: Int?, authenticationFailuresPerMinute: Int?, readinessCacheSeconds: Double) {
        self.requestsPerSecond = requestsPerSecond
        self.authenticationFailuresPerMinute = authenticationFailuresPerMinute
        self.readinessCacheSeconds = readinessCacheSeconds
    }

    /// The limits a process has unless configured otherwise: 50 requests a second per key (bursts of 100),
    /// 20 failed authentications a minute per address, `/readyz` cached for a second.
    public static let standard = RequestLimits(
        requestsPerSecond: 50, authenticationFailuresPerMinute: 20, readinessCacheSeconds: 1)

    /// No limits: for in-process tests of other things, which send hundreds of requests a second with one key.
    public static let none = RequestLimits(
        requestsPerSecond: nil, authenticationFailuresPerMinute: nil, readinessCacheSeconds: 0)

    /// The window failed authentications are counted in, in seconds.
    public static let authenticationFailureWindow = 60.0

    /// A `Retry-After` value: whole seconds, at least 1.
    static func retryAfterSeconds(_ seconds: Double) -> Int {
        max(1, Int(seconds.rounded(.up)))
    }
}
