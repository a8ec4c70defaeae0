/// When the technician is expected, in whole seconds since 1970 (`end >= start`).
public struct ArrivalWindow: Sendable, Hashable {
    /// The window opens (`ContentState.arrivalStartEpoch`).
    public var start: Int
    /// The window closes (`ContentState.arrivalEndEpoch`).
    public var end: Int

    /// A window. Validation (`end >= start`) happens where input is parsed.
    public init(start: Int, end: Int) {
        self.start = start
        self.end = end
    }
}
