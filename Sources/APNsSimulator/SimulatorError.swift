/// Why the simulator could not start or run: a code to switch on, a message for humans
/// (never a key or token), and the underlying cause when there is one.
public struct SimulatorError: Error, CustomStringConvertible, Sendable {
    /// What went wrong, as a small extensible set.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Value: String, Sendable {
            case usage, certificate, publicKey, socket, tls, notRunning, alreadyRunning
        }
        private let value: Value
        private init(_ value: Value) { self.value = value }

        /// Bad command-line flags (the executable exits with status 2).
        public static let usage = Code(.usage)
        /// The TLS certificate or key could not be generated, read or written.
        public static let certificate = Code(.certificate)
        /// The ES256 public key for JWT verification could not be read or is not P-256.
        public static let publicKey = Code(.publicKey)
        /// The listening socket could not be created or bound.
        public static let socket = Code(.socket)
        /// The TLS context could not be set up.
        public static let tls = Code(.tls)
        /// The simulator is not running.
        public static let notRunning = Code(.notRunning)
        /// `start()` was called twice.
        public static let alreadyRunning = Code(.alreadyRunning)

        public var description: String { value.rawValue }
    }

    public let code: Code
    public let message: String
    public let underlying: (any Error & Sendable)?

    public init(_ code: Code, _ message: String, underlying: (any Error & Sendable)? = nil) {
        self.code = code
        self.message = message
        self.underlying = underlying
    }

    /// True for usage errors, which the executable reports with exit status 2.
    public var isUsageError: Bool { code == .usage }

    public var description: String { "apns-sim \(code): \(message)" }
}
