/// Faults to inject, as the in-process API and `POST /_sim/faults` both take them. Every field is
/// optional; the fields given are applied, the others left as they are (`clear` first removes all).
///
/// JSON example: `{"failNext": {"count": 2, "status": 503, "reason": "ServiceUnavailable"},
/// "latency": {"milliseconds": 200}, "dropConnection": {"afterRequests": 3, "mode": "goaway"}}`.
public struct FaultSettings: Sendable, Equatable {
    /// A status and reason to answer with.
    public struct Failure: Sendable, Equatable {
        /// How many requests (for `failNext`); ignored elsewhere.
        public var count: Int?
        public var status: Int
        public var reason: String
        public init(count: Int? = nil, status: Int, reason: String) {
            self.count = count
            self.status = status
            self.reason = reason
        }
    }

    /// Fail a random fraction (0…1) of requests.
    public struct Fraction: Sendable, Equatable {
        public var fraction: Double
        public var status: Int
        public var reason: String
        /// Seed for a reproducible sequence; `nil` seeds from the system.
        public var seed: UInt64?
        public init(fraction: Double, status: Int, reason: String, seed: UInt64? = nil) {
            self.fraction = fraction
            self.status = status
            self.reason = reason
            self.seed = seed
        }
    }

    /// A device token to answer 410 `Unregistered` for.
    public struct Unregistration: Sendable, Equatable {
        public var token: String
        /// Milliseconds since 1970 reported in the 410's `timestamp`; `nil`: now.
        public var timestamp: Int64?
        public init(token: String, timestamp: Int64? = nil) {
            self.token = token
            self.timestamp = timestamp
        }
    }

    /// Delay answers (each on its own timer: other streams are not held up).
    public struct Latency: Sendable, Equatable {
        /// Delay per request; 0 removes the latency.
        public var milliseconds: Int
        /// How many requests get it; `nil`: until cleared.
        public var count: Int?
        public init(milliseconds: Int, count: Int? = nil) {
            self.milliseconds = milliseconds
            self.count = count
        }
    }

    /// How a connection is dropped.
    public enum DropMode: String, Sendable, Equatable {
        /// HTTP/2 GOAWAY naming the last stream answered, then close: unanswered streams may be retried.
        case goaway
        /// Close the TCP connection with no goodbye.
        case close
    }

    /// Drop the connection that carries the request after the next `afterRequests` ones (which are
    /// answered); that request and the connection's other open streams get no answer. One-shot.
    public struct Drop: Sendable, Equatable {
        public var afterRequests: Int
        public var mode: DropMode
        public init(afterRequests: Int, mode: DropMode = .close) {
            self.afterRequests = afterRequests
            self.mode = mode
        }
    }

    /// Remove every fault before applying the rest.
    public var clear: Bool?
    /// Fail the next `count` requests with `status`/`reason`.
    public var failNext: Failure?
    /// Fail a random fraction of requests.
    public var failFraction: Fraction?
    /// Tokens to answer 410 `Unregistered`.
    public var unregister: [Unregistration]?
    /// Delay answers.
    public var latency: Latency?
    /// Drop a connection after some requests.
    public var dropConnection: Drop?
    /// Every provider token seen so far is answered 403 `ExpiredProviderToken` from now on
    /// (a freshly signed one is accepted).
    public var expireProviderTokens: Bool?

    /// Which listener's requests the faults above meet: `pushes` (the default: device pushes and
    /// broadcasts, to either push host) or `channels` (channel management). Each has its own plan.
    public var listener: SimulatorListener?
    /// How many channels the app may hold (Apple: 10,000); a create beyond it answers 400
    /// `CannotCreateChannelConfig`. `clear` restores Apple's.
    public var channelLimit: Int?
    /// Channel ids the simulator forgets as if deleted behind the server's back (later broadcasts
    /// answer 404 `ChannelNotRegistered`; `all-channels` no longer lists them).
    public var forgetChannels: [String]?

    public init(
        clear: Bool? = nil, failNext: Failure? = nil, failFraction: Fraction? = nil,
        unregister: [Unregistration]? = nil, latency: Latency? = nil, dropConnection: Drop? = nil,
        expireProviderTokens: Bool? = nil, listener: SimulatorListener? = nil, channelLimit: Int? = nil,
        forgetChannels: [String]? = nil
    ) {
        self.listener = listener
        self.channelLimit = channelLimit
        self.forgetChannels = forgetChannels
        self.clear = clear
        self.failNext = failNext
        self.failFraction = failFraction
        self.unregister = unregister
        self.latency = latency
        self.dropConnection = dropConnection
        self.expireProviderTokens = expireProviderTokens
    }
}
