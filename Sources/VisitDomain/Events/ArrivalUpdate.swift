/// The optional distance and window a status event, `progress` or `reassigned` may carry.
public struct ArrivalUpdate: Sendable, Hashable {
    /// A new distance, kilometres.
    public var kilometresAway: Double?
    /// A new arrival window.
    public var arrivalWindow: ArrivalWindow?

    /// An update; both `nil` means "nothing changes".
    public init(kilometresAway: Double? = nil, arrivalWindow: ArrivalWindow? = nil) {
        self.kilometresAway = kilometresAway
        self.arrivalWindow = arrivalWindow
    }

    /// Nothing changes.
    public static let none = ArrivalUpdate()

    /// Whether it changes nothing.
    public var isEmpty: Bool { kilometresAway == nil && arrivalWindow == nil }
}
