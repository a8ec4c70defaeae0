/// A stored event (or history) the domain cannot read back.
public struct StoredEventError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What kind of failure; compare with the static members.
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        enum Value: String, Sendable {
            case unknownEventType = "unknown_event_type"
            case unsupportedSchemaVersion = "unsupported_schema_version"
            case corruptData = "corrupt_event_data"
            case inconsistentHistory = "inconsistent_history"
        }
        let value: Value

        /// The stored `eventType` names no known event.
        public static let unknownEventType = Code(value: .unknownEventType)
        /// The `schemaVersion` is newer than this code knows (or missing/invalid).
        public static let unsupportedSchemaVersion = Code(value: .unsupportedSchemaVersion)
        /// The data is not the JSON its type and version require.
        public static let corruptData = Code(value: .corruptData)
        /// Events in an impossible order (nothing before `scheduled`, `scheduled` twice, a version gap).
        public static let inconsistentHistory = Code(value: .inconsistentHistory)

        /// The snake_case code.
        public var rawValue: String { value.rawValue }
        public var description: String { rawValue }
    }

    /// What kind of failure.
    public var code: Code
    /// The event type as stored.
    public var eventType: String
    /// A message for humans.
    public var message: String

    /// A stored-event error.
    public init(code: Code, eventType: String, message: String) {
        self.code = code
        self.eventType = eventType
        self.message = message
    }

    public var description: String { "\(code) (\(eventType)): \(message)" }
}
