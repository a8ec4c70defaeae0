/// When to present, mint or hold back a provider token: a pure state machine, driven by the caller
/// with the current time. No I/O, no clock of its own.
///
/// Apple's rules: present one token for up to an hour, refresh it no more often than every 20
/// minutes, and back off when told `TooManyProviderTokenUpdates`. This machine reuses the token,
/// asks for a new one once it is `refreshAge` old, forces one refresh on `ExpiredProviderToken` when
/// the token is at least `minimumRefreshInterval` old (a younger token means our clock is wrong), and
/// stops minting for `cooldown` after `TooManyProviderTokenUpdates`.
public struct ProviderTokenPolicy: Sendable {
    /// The time limits, in seconds.
    public struct Settings: Sendable, Hashable {
        /// A token this old is replaced (Apple refuses tokens older than an hour).
        public var refreshAge: Double
        /// Tokens are never minted more often than this.
        public var minimumRefreshInterval: Double
        /// A token this old is never presented.
        public var maximumAge: Double
        /// No minting for this long after `TooManyProviderTokenUpdates`.
        public var cooldown: Double

        public init(
            refreshAge: Double = 50 * 60, minimumRefreshInterval: Double = 20 * 60,
            maximumAge: Double = 60 * 60, cooldown: Double = 20 * 60
        ) {
            self.refreshAge = refreshAge
            self.minimumRefreshInterval = minimumRefreshInterval
            self.maximumAge = maximumAge
            self.cooldown = cooldown
        }
    }

    /// What to do for the next request.
    public enum Decision: Sendable, Hashable {
        /// Present this token.
        case present(ProviderToken)
        /// Obtain a new token (adopt the fleet's or mint one), then report it with `installed`.
        case mint
        /// Another caller is obtaining a token; wait for it.
        case wait
        /// No token may be presented before this time.
        case unavailable(until: Double)
    }

    /// How an `ExpiredProviderToken` answer is handled.
    public enum ExpiredReaction: Sendable, Hashable {
        /// The rejected token was already replaced: retry with the current one.
        case alreadyReplaced
        /// The token is old enough to be refreshed: the next request gets a new one. Retry.
        case refresh
        /// The token is younger than the minimum refresh interval: Apple sees our `iat` as too old,
        /// so the clock is wrong. Refreshing would not help; raise a configuration alert.
        case clockProblem
    }

    public let settings: Settings
    /// The token presented now.
    public private(set) var current: ProviderToken?
    /// When this process last minted a token.
    public private(set) var lastMintedAt: Double?
    /// No minting before this time (after `TooManyProviderTokenUpdates`).
    public private(set) var coolingDownUntil: Double?
    /// Someone is obtaining a token.
    public private(set) var isMinting = false
    /// APNs called `current` expired: never present it again.
    public private(set) var currentRejected = false

    public init(settings: Settings = Settings()) { self.settings = settings }

    /// Decides what the next request presents. `.mint` marks a mint as started: report its end
    /// with `installed(_:mintedLocally:now:)` or `mintFailed()`.
    public mutating func decide(now: Double) -> Decision {
        if let token = current, !currentRejected, token.age(at: now) < settings.refreshAge {
            return .present(token)
        }
        let usable = current.flatMap { token in
            !currentRejected && token.age(at: now) < settings.maximumAge ? token : nil
        }
        if isMinting { return usable.map(Decision.present) ?? .wait }
        var notBefore: Double? = nil
        if let until = coolingDownUntil, now < until { notBefore = until }
        if let last = lastMintedAt, now - last < settings.minimumRefreshInterval {
            notBefore = max(notBefore ?? 0, last + settings.minimumRefreshInterval)
        }
        if let notBefore { return usable.map(Decision.present) ?? .unavailable(until: notBefore) }
        isMinting = true
        return .mint
    }

    /// A token was obtained: minted here (`mintedLocally`) or adopted from the fleet's store.
    public mutating func installed(_ token: ProviderToken, mintedLocally: Bool, now: Double) {
        if token != current { currentRejected = false }
        current = token
        isMinting = false
        if mintedLocally { lastMintedAt = now }
    }

    /// Obtaining a token failed; the next request tries again.
    public mutating func mintFailed() { isMinting = false }

    /// APNs answered 403 `ExpiredProviderToken` to a request that presented `token`.
    public mutating func rejectedAsExpired(_ token: ProviderToken, now: Double) -> ExpiredReaction {
        guard token == current, !currentRejected else { return .alreadyReplaced }
        guard token.age(at: now) >= settings.minimumRefreshInterval else { return .clockProblem }
        currentRejected = true
        return .refresh
    }

    /// APNs answered 429 `TooManyProviderTokenUpdates`: stop minting for `cooldown`.
    public mutating func rejectedAsTooManyUpdates(now: Double) {
        coolingDownUntil = now + settings.cooldown
    }
}
