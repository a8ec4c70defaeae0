/// A field the reader refuses, before it is turned into the caller's typed error.
struct FieldProblem: Error {
    enum Kind { case missing, wrongType, invalidValue, unknownField }
    var kind: Kind
    var path: String
    var reason: String

    var message: String { "\(path): \(reason)" }

    /// A key as messages show it: keys come from the client, so a long one is cut short.
    static func displayKey(_ key: String) -> String {
        key.utf8.count <= 64 ? key : String(decoding: key.utf8.prefix(60), as: UTF8.self) + "…"
    }
}
