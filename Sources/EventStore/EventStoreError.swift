import Postgres

/// A typed event-store error. Conflicts have their own code.
public struct EventStoreError: Error, CustomStringConvertible, Sendable {
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Kind: String, Sendable {
            case wrongExpectedVersion, invalidStreamName, invalidEventType, eventTooLarge, invalidEventData
            case unavailable, checkpointConflict
        }
        private let kind: Kind
        /// The stream is not at the version the caller expected (optimistic concurrency).
        public static let wrongExpectedVersion = Code(kind: .wrongExpectedVersion)
        public static let invalidStreamName = Code(kind: .invalidStreamName)
        public static let invalidEventType = Code(kind: .invalidEventType)
        /// Event data over the configured limit, refused before reaching the database.
        public static let eventTooLarge = Code(kind: .eventTooLarge)
        public static let invalidEventData = Code(kind: .invalidEventData)
        /// The database cannot be reached.
        public static let unavailable = Code(kind: .unavailable)
        /// Another reader moved the checkpoint first.
        public static let checkpointConflict = Code(kind: .checkpointConflict)
        public var description: String { kind.rawValue }
    }

    public let code: Code
    public let message: String
    /// For `wrongExpectedVersion`: the stream's actual version (0 when it does not exist).
    public let actualVersion: Int64?
    public let underlying: (any Error)?

    public init(code: Code, message: String, actualVersion: Int64? = nil, underlying: (any Error)? = nil) {
        self.code = code
        self.message = message
        self.actualVersion = actualVersion
        self.underlying = underlying
    }

    public var description: String { "EventStoreError(\(code)): \(message)" }

    /// Maps database errors: unavailability keeps its meaning, everything else passes through.
    static func wrap(_ error: any Error) -> any Error {
        if let pg = error as? PostgresError, pg.isUnavailable {
            return EventStoreError(code: .unavailable, message: pg.message, underlying: pg)
        }
        return error
    }
}
