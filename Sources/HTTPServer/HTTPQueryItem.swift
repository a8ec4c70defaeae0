/// One `name=value` pair of a request's query string, percent-decoded (`+` is a space).
public struct HTTPQueryItem: Sendable, Hashable {
    public var name: String
    /// Nil for a bare `?name` without `=`.
    public var value: String?

    public init(name: String, value: String?) {
        self.name = name
        self.value = value
    }
}
