import Foundation

/// Who caused an event and why: stored as the event's metadata.
public struct EventMetadata: Codable, Sendable, Equatable {
    public var actorRole: String?
    public var actorSubject: String?
    /// The display name of the person whose key appended the event, when the key has one.
    public var actorName: String?
    public var correlationId: String?
    public var causationId: String?

    public init(
        actorRole: String? = nil, actorSubject: String? = nil, actorName: String? = nil, correlationId: String? = nil,
        causationId: String? = nil
    ) {
        self.actorRole = actorRole
        self.actorSubject = actorSubject
        self.actorName = actorName
        self.correlationId = correlationId
        self.causationId = causationId
    }
}

/// An event to append. `data` is a JSON object's text.
public struct NewEvent: Sendable, Equatable {
    public var type: String
    public var data: String
    public var metadata: EventMetadata

    public init(type: String, data: String, metadata: EventMetadata = EventMetadata()) {
        self.type = type
        self.data = data
        self.metadata = metadata
    }
}

/// What the stream must be at for an append to succeed.
public enum ExpectedVersion: Sendable, Equatable {
    /// Whatever it is (the append goes at the end).
    case any
    /// The stream must not exist yet.
    case noStream
    /// The stream's last position must be exactly this.
    case exactly(Int64)
}

/// One append: events to one stream, an expectation and optionally a recorded time.
public struct AppendRequest: Sendable {
    public var streamName: String
    public var events: [NewEvent]
    public var expectedVersion: ExpectedVersion
    /// Seconds since 1970 to record (the application's clock); nil lets the database stamp `now()`.
    public var recordedAt: Double?

    public init(
        streamName: String, events: [NewEvent], expectedVersion: ExpectedVersion = .any, recordedAt: Double? = nil
    ) {
        self.streamName = streamName
        self.events = events
        self.expectedVersion = expectedVersion
        self.recordedAt = recordedAt
    }
}

/// The outcome of an append.
public struct AppendResult: Sendable, Equatable {
    public let streamName: String
    public let firstPosition: Int64
    /// The stream's version after the append.
    public let lastPosition: Int64
    public let globalPositions: [Int64]
    /// Seconds since 1970, as recorded.
    public let recordedAt: Double
}

/// An event as stored.
public struct RecordedEvent: Sendable, Equatable {
    public let globalPosition: Int64
    public let streamName: String
    public let position: Int64
    public let type: String
    public let data: String
    public let metadata: EventMetadata
    public let transactionId: UInt64
    /// Seconds since 1970.
    public let recordedAt: Double

    public var checkpoint: Checkpoint { Checkpoint(transactionId: transactionId, globalPosition: globalPosition) }
}

/// A follower's place in the log: events are totally ordered by (transaction id, global position) and
/// only read below the oldest running transaction, so the order is stable and no late commit is skipped.
public struct Checkpoint: Sendable, Hashable, Comparable, CustomStringConvertible {
    public var transactionId: UInt64
    public var globalPosition: Int64

    public init(transactionId: UInt64, globalPosition: Int64) {
        self.transactionId = transactionId
        self.globalPosition = globalPosition
    }

    public static let start = Checkpoint(transactionId: 0, globalPosition: 0)

    public static func < (a: Checkpoint, b: Checkpoint) -> Bool {
        (a.transactionId, a.globalPosition) < (b.transactionId, b.globalPosition)
    }

    public var description: String { "\(transactionId)/\(globalPosition)" }
}

/// Limits checked before anything reaches the database.
public struct EventStoreLimits: Sendable {
    public var maxStreamNameLength = 200
    public var maxEventTypeLength = 100
    public var maxEventDataBytes = 64 * 1024
    public var maxEventsPerAppend = 1000
    public init() {}
}

/// The session that holds back followers: the oldest open transaction with an id.
public struct SnapshotHorizonHolder: Sendable, Equatable {
    public let pid: Int
    public let database: String?
    public let user: String?
    public let state: String?
    public let applicationName: String?
    public let transactionAgeSeconds: Double
    public let query: String?
}
