/// The bounds request bodies must respect (UTF-8 bytes for strings; ids: `IdGrammar`).
///
/// Each string is bounded on its own; what all of them weigh together in a push is
/// checked against the 4 KB APNs budget when the event is decided.
public enum VisitInputLimits {
    /// Short names: `customerFirstName`, `technician.name`, `technician.avatarSymbol`.
    public static let nameBytes = 256
    /// Free text: `serviceAddress`, `jobSummary`, `technician.vanDescription`, `reason`.
    public static let textBytes = 1024
    /// The largest `kilometresAway` (a bit more than the way round the Earth).
    public static let maximumKilometres = 40_100.0
    /// Epoch seconds are in `0...maximumEpoch` (the last second of year 9999).
    public static let maximumEpoch = 253_402_300_799
}
