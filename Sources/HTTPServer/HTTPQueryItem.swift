/// One `name=value` pair of a request's query string, percent-decoded (`+` is a space).
public struct HTTPQueryItem: Sendable, Hashable {
    /// The decoded name.
    public var name: String
    /// Nil for a bare `?name` without `=`.
    public var value: String?

    /// An item with a decoded name and value.
    public init(name: String, value: String?) {
        self.name = name
        self.value = value
    }
}
