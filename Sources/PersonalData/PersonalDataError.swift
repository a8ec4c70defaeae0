/// A customer's personal data that cannot be read back: a ciphertext (or a wrapped data key) that fails
/// authentication — a changed row — or a data key wrapped under a key file this process does not hold.
/// Only the visit (when known) and the key id are named, never a byte of the data.
public struct PersonalDataError: Error, Sendable, CustomStringConvertible {
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        private enum Value: String, Sendable { case unreadable, wrappingKeyMissing }
        private let value: Value
        /// A sealed value or a wrapped key failed authentication (a tampered or damaged row).
        public static let unreadable = Code(value: .unreadable)
        /// The data key is wrapped under a key file this process was not given.
        public static let wrappingKeyMissing = Code(value: .wrappingKeyMissing)
        public var description: String { value.rawValue }
    }

    public let code: Code
    public let message: String
    /// The visit whose data it is, when the answer being opened names one.
    public let visitId: String?

    public init(code: Code, message: String, visitId: String? = nil) {
        self.code = code
        self.message = message
        self.visitId = visitId
    }

    public var description: String { "\(code): \(message)" }
}
