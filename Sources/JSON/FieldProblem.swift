/// A field `JSONObjectReader` refuses, before the caller turns it into its own typed error.
public struct FieldProblem: Error, Sendable, Equatable {
    /// What is wrong with the field.
    public enum Kind: Sendable, Equatable { case missing, wrongType, invalidValue, unknownField }
    /// What is wrong with the field.
    public var kind: Kind
    /// The field's dotted path (`technician.name`), or `body` for the document itself.
    public var path: String
    /// A short human explanation.
    public var reason: String

    /// A problem.
    public init(kind: Kind, path: String, reason: String) {
        self.kind = kind
        self.path = path
        self.reason = reason
    }

    /// `path: reason`, as error messages show it.
    public var message: String { "\(path): \(reason)" }

    /// A key as messages show it: keys come from the client, so a long one is cut short.
    public static func displayKey(_ key: String) -> String {
        key.utf8.count <= 64 ? key : String(decoding: key.utf8.prefix(60), as: UTF8.self) + "…"
    }
}
