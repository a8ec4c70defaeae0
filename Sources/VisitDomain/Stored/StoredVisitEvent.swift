/// An event as the log holds it: its `eventType` column, its JSON `data`, its version and
/// recorded time. The replay path decodes and folds these.
public struct StoredVisitEvent: Sendable, Hashable {
    /// The contract's event type name.
    public var eventType: String
    /// The stored JSON (with `schemaVersion`).
    public var data: [UInt8]
    /// The event's version in its visit's stream.
    public var version: Int
    /// When it was recorded, epoch seconds.
    public var recordedAt: Int

    /// A stored event.
    public init(eventType: String, data: [UInt8], version: Int, recordedAt: Int) {
        self.eventType = eventType
        self.data = data
        self.version = version
        self.recordedAt = recordedAt
    }

    /// How an accepted event is stored.
    public init(_ recorded: RecordedVisitEvent) {
        self.init(
            eventType: recorded.event.eventType, data: recorded.event.storedData(), version: recorded.version,
            recordedAt: recorded.recordedAt)
    }

    /// Decodes the event (upcasting older schema versions).
    public func decoded() throws(StoredEventError) -> RecordedVisitEvent {
        RecordedVisitEvent(
            try VisitEvent.decodeStored(eventType: eventType, data: data), version: version, recordedAt: recordedAt)
    }
}

extension VisitDecider {
    /// Decodes and folds one visit's stored history, oldest first (the replay path).
    public static func replay(_ history: some Sequence<StoredVisitEvent>) throws(StoredEventError) -> VisitState? {
        var state = initialState
        for stored in history { state = try evolve(state, stored.decoded()) }
        return state
    }
}
