/// An event as the store recorded it: the fold's input.
public struct RecordedVisitEvent: Sendable, Hashable {
    /// The event.
    public var event: VisitEvent
    /// Its version in the visit's stream (1 for `scheduled`).
    public var version: Int
    /// When the store recorded it, whole seconds since 1970.
    public var recordedAt: Int

    /// A recorded event.
    public init(_ event: VisitEvent, version: Int, recordedAt: Int) {
        self.event = event
        self.version = version
        self.recordedAt = recordedAt
    }
}
