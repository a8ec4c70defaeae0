/// The technician assigned to a visit, as the customer's Live Activity shows them.
public struct Technician: Sendable, Hashable {
    /// The technician's id (the `subject` of their API key).
    public var id: String
    /// The name shown on the card (`ContentState.technicianName`).
    public var name: String
    /// An SF Symbol or asset name (`ContentState.avatarSymbol`).
    public var avatarSymbol: String
    /// The van, so the customer recognises it (`ContentState.vanDescription`).
    public var vanDescription: String

    /// A technician.
    public init(id: String, name: String, avatarSymbol: String, vanDescription: String) {
        self.id = id
        self.name = name
        self.avatarSymbol = avatarSymbol
        self.vanDescription = vanDescription
    }
}
