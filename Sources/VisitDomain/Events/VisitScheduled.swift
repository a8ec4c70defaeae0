/// The first event of every visit: what `POST /v1/visits` books.
public struct VisitScheduled: Sendable, Hashable {
    /// The customer whose visit it is.
    public var customerId: String
    /// The static fields of the Live Activity, `visitId` included.
    public var attributes: ServiceVisitAttributes
    /// Who comes.
    public var technician: Technician
    /// When they are expected.
    public var arrivalWindow: ArrivalWindow
    /// How far they are (kilometres, `>= 0`).
    public var kilometresAway: Double
    /// Where the work happens, as `ServiceLocation.text` — or, once the write side sealed it, its sealed
    /// text: the customer's personal data, never in a push (nil: booked without one).
    public var location: String?
    /// The customer's language (nil: the rules' default texts). Not personal data.
    public var locale: LanguageTag?

    /// The visit's id (the same as `attributes.visitId`).
    public var visitId: String { attributes.visitId }

    /// A scheduling.
    public init(
        customerId: String, attributes: ServiceVisitAttributes, technician: Technician,
        arrivalWindow: ArrivalWindow, kilometresAway: Double, location: String? = nil, locale: LanguageTag? = nil
    ) {
        self.customerId = customerId
        self.attributes = attributes
        self.technician = technician
        self.arrivalWindow = arrivalWindow
        self.kilometresAway = kilometresAway
        self.location = location
        self.locale = locale
    }
}
