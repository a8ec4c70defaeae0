/// Why the HTTP server could not be configured, bound or started.
public struct HTTPServerError: Error, CustomStringConvertible, Sendable {
    /// A machine-readable reason; new codes may be added.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Value: String {
            case invalidListenAddress = "invalid_listen_address"
            case bindFailed = "bind_failed"
            case daemonStartFailed = "daemon_start_failed"
            case alreadyStarted = "already_started"
            case invalidConfiguration = "invalid_configuration"
        }
        private let value: Value
        private init(_ value: Value) { self.value = value }

        /// The listen address is not `host:port` with a numeric host (or `localhost`, `*`) and a port.
        public static let invalidListenAddress = Code(.invalidListenAddress)
        /// socket/bind/listen failed (address in use, permission denied, …).
        public static let bindFailed = Code(.bindFailed)
        /// libmicrohttpd refused to start.
        public static let daemonStartFailed = Code(.daemonStartFailed)
        /// `run()` was called on a server that already ran.
        public static let alreadyStarted = Code(.alreadyStarted)
        /// A limit is out of range.
        public static let invalidConfiguration = Code(.invalidConfiguration)

        public var description: String { value.rawValue }
    }

    /// What went wrong, for code.
    public let code: Code
    /// What went wrong, for people (never a secret).
    public let message: String
    /// The `errno` behind a system call failure, if any.
    public let systemError: Int32?

    /// An error with its code, message and `errno`.
    public init(code: Code, message: String, systemError: Int32? = nil) {
        self.code = code
        self.message = message
        self.systemError = systemError
    }

    public var description: String {
        if let systemError {
            return "\(code): \(message) (errno \(systemError): \(String(cString: strerror(systemError))))"
        }
        return "\(code): \(message)"
    }
}

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif
