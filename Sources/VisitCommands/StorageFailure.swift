import EventStore
import Postgres

/// What a use case's failure from the database or the event store means to its caller, without naming
/// those modules' errors: the database unreachable (retry later), a lost version race, or an event the
/// store refuses. Nil for every other error.
public struct StorageFailure: Sendable, CustomStringConvertible {
    public enum Kind: Sendable, Equatable {
        /// The database is down, or no connection came within the pool's timeout.
        case unavailable
        /// The stream is at another version than expected (`wrongExpectedVersion`).
        case versionConflict
        /// The store refuses the event itself (too large, a bad stream name, type or data).
        case invalidEvent
    }

    public let kind: Kind
    public let message: String
    public var description: String { message }

    public init?(_ error: any Error) {
        switch error {
        case let e as EventStoreError:
            switch e.code {
            case .unavailable: (kind, message) = (.unavailable, e.message)
            case .wrongExpectedVersion: (kind, message) = (.versionConflict, e.message)
            case .eventTooLarge, .invalidStreamName, .invalidEventType, .invalidEventData:
                (kind, message) = (.invalidEvent, e.message)
            default: return nil
            }
        case let e as PostgresError where e.isUnavailable: (kind, message) = (.unavailable, e.message)
        default: return nil
        }
    }

    /// Whether `error` is a lost version race (`LostRace` runs such a write again).
    public static func isLostRace(_ error: any Error) -> Bool { StorageFailure(error)?.kind == .versionConflict }
}
