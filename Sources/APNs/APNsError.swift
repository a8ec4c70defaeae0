/// An error raised while configuring or authenticating the APNs client.
///
/// Messages name the environment variable at fault and never carry a secret
/// (no key material, no token, no JWT).
public struct APNsError: Error, Sendable, CustomStringConvertible {
    /// A stable, machine-readable code. New codes may be added without breaking callers.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Value: String, Sendable {
            case missingVariable = "missing_variable"
            case invalidURL = "invalid_url"
            case keyFileUnreadable = "key_file_unreadable"
            case invalidKey = "invalid_key"
            case keyNotP256 = "key_not_p256"
            case caFileUnreadable = "ca_file_unreadable"
            case invalidCAFile = "invalid_ca_file"
            case signingFailed = "signing_failed"
            case tokenStoreFailed = "token_store_failed"
            case providerTokenUnavailable = "provider_token_unavailable"
        }
        private let value: Value
        private init(_ value: Value) { self.value = value }

        /// A required variable is absent or empty.
        public static let missingVariable = Code(.missingVariable)
        /// A URL variable is not an `https://host[:port]` base URL.
        public static let invalidURL = Code(.invalidURL)
        /// The `.p8` key file is missing or unreadable.
        public static let keyFileUnreadable = Code(.keyFileUnreadable)
        /// The key file holds no private key OpenSSL can read.
        public static let invalidKey = Code(.invalidKey)
        /// The key is not an EC key on P-256 (ES256 needs one).
        public static let keyNotP256 = Code(.keyNotP256)
        /// The extra CA file is missing or unreadable.
        public static let caFileUnreadable = Code(.caFileUnreadable)
        /// The extra CA file holds no PEM certificate.
        public static let invalidCAFile = Code(.invalidCAFile)
        /// OpenSSL failed to sign a provider token.
        public static let signingFailed = Code(.signingFailed)
        /// The shared provider-token store failed.
        public static let tokenStoreFailed = Code(.tokenStoreFailed)
        /// No provider token may be presented now (cooling down after `TooManyProviderTokenUpdates`).
        public static let providerTokenUnavailable = Code(.providerTokenUnavailable)

        public var description: String { value.rawValue }
    }

    /// What went wrong, for programs.
    public let code: Code
    /// What went wrong, for humans. Names the variable at fault; never holds a secret.
    public let message: String
    /// The environment variable at fault, when there is one.
    public let variable: String?
    /// The underlying cause (an OpenSSL or store error text), when known. Never a secret.
    public let cause: String?

    public init(code: Code, message: String, variable: String? = nil, cause: String? = nil) {
        self.code = code
        self.message = message
        self.variable = variable
        self.cause = cause
    }

    public var description: String {
        var text = "apns \(code): \(message)"
        if let cause { text += " (\(cause))" }
        return text
    }
}
