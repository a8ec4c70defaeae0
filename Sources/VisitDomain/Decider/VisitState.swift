/// A visit as its events left it: the fold's result and the projection's input.
///
/// Every field is a pure function of the recorded events (their recorded times included).
public struct VisitState: Sendable, Hashable {
    /// The static fields, `visitId` included.
    public var attributes: ServiceVisitAttributes
    /// The customer whose visit it is.
    public var customerId: String
    /// The assigned technician (only they, of all technicians, may post to and read it).
    public var technician: Technician
    /// The current status.
    public var status: VisitStatus
    /// The current arrival window (collapsed to the arrival time once on site).
    public var arrivalWindow: ArrivalWindow
    /// The current distance, kilometres.
    public var kilometresAway: Double
    /// The reason given with `cancelled` or `failed`.
    public var reason: String?
    /// The version of the last event (1 after `scheduled`).
    public var version: Int
    /// The type of the last event.
    public var lastEventType: VisitEventType
    /// When the `scheduled` event was recorded.
    public var scheduledAt: Int
    /// When the last event was recorded (stale dates count from here).
    public var lastRecordedAt: Int
    /// The `aps.timestamp` of the state: `max(recordedAt, previous + 1)` per event, so strictly
    /// increasing across the visit's pushes whatever the recorded times.
    public var apsTimestamp: Int
    /// When the status last changed (`scheduled` counts; `progress` never does).
    public var statusChangedAt: Int
    /// The version of the event that last changed the status.
    public var statusChangedVersion: Int
    /// Where the work happens, as booked (`VisitScheduled.location`: sealed once stored); nil: no location.
    public var location: String? = nil
    /// The customer's language, as booked (`VisitScheduled.locale`): which of the rules' texts its pushes
    /// and tracking page carry; nil: the default texts.
    public var locale: LanguageTag? = nil

    /// The visit's id.
    public var visitId: String { attributes.visitId }
    /// Whether the visit has ended (completed, cancelled or failed).
    public var hasEnded: Bool { status.hasEnded }
    /// Whether the last event changed the status (alerts go only with such events).
    public var lastEventChangedStatus: Bool { statusChangedVersion == version }
}
