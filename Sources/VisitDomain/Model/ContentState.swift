/// The dynamic part of the Live Activity: exactly the seed's `ContentState` keys and JSON types.
public struct ContentState: Sendable, Hashable {
    /// The technician's name.
    public var technicianName: String
    /// An SF Symbol or asset name.
    public var avatarSymbol: String
    /// The van; for a failed visit, the failure reason (seed "Terminal server failure").
    public var vanDescription: String
    /// Arrival window start, seconds since 1970.
    public var arrivalStartEpoch: Int
    /// Arrival window end, seconds since 1970.
    public var arrivalEndEpoch: Int
    /// The status, travelling as its raw value.
    public var status: VisitStatus
    /// Distance still to drive; a JSON number, never a string.
    public var kilometresAway: Double

    /// A content state.
    public init(
        technicianName: String, avatarSymbol: String, vanDescription: String,
        arrivalStartEpoch: Int, arrivalEndEpoch: Int, status: VisitStatus, kilometresAway: Double
    ) {
        self.technicianName = technicianName
        self.avatarSymbol = avatarSymbol
        self.vanDescription = vanDescription
        self.arrivalStartEpoch = arrivalStartEpoch
        self.arrivalEndEpoch = arrivalEndEpoch
        self.status = status
        self.kilometresAway = kilometresAway
    }

    /// The JSON object, keys in the seed's order.
    public var json: JSONValue {
        .object([
            JSONMember("technicianName", .string(technicianName)),
            JSONMember("avatarSymbol", .string(avatarSymbol)),
            JSONMember("vanDescription", .string(vanDescription)),
            JSONMember("arrivalStartEpoch", .number(Double(arrivalStartEpoch))),
            JSONMember("arrivalEndEpoch", .number(Double(arrivalEndEpoch))),
            JSONMember("status", .string(status.rawValue)),
            JSONMember("kilometresAway", .number(kilometresAway)),
        ])
    }
}
