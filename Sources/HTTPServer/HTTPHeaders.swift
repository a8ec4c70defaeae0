/// HTTP header fields in the order they were sent or added, looked up case-insensitively.
///
/// Header values can carry secrets (`Authorization`), so the server never logs them.
public struct HTTPHeaders: Sendable, Sequence, ExpressibleByDictionaryLiteral, CustomStringConvertible {
    /// One header field.
    public struct Field: Sendable, Hashable {
        /// The name as sent or added.
        public var name: String
        /// The value (may be a secret: never log it).
        public var value: String

        /// A field.
        public init(name: String, value: String) {
            self.name = name
            self.value = value
        }
    }

    /// Every field, in order.
    public private(set) var fields: [Field]

    /// No fields.
    public init() { fields = [] }

    /// The given fields, in order.
    public init(_ fields: [(String, String)]) {
        self.fields = fields.map { Field(name: $0.0, value: $0.1) }
    }

    /// Fields from a literal, in the literal's order.
    public init(dictionaryLiteral elements: (String, String)...) {
        self.init(elements)
    }

    /// The value of the first field named `name` (any case), or nil.
    public subscript(name: String) -> String? {
        fields.first { HTTPHeaders.sameName($0.name, name) }?.value
    }

    /// The values of every field named `name` (any case), in order.
    public func values(for name: String) -> [String] {
        fields.filter { HTTPHeaders.sameName($0.name, name) }.map(\.value)
    }

    /// Whether a field named `name` (any case) is present.
    public func contains(_ name: String) -> Bool {
        fields.contains { HTTPHeaders.sameName($0.name, name) }
    }

    /// Appends a field, keeping any others of the same name.
    public mutating func add(name: String, value: String) {
        fields.append(Field(name: name, value: value))
    }

    /// Replaces every field named `name` by one field with `value`.
    public mutating func replaceOrAdd(name: String, value: String) {
        remove(name: name)
        add(name: name, value: value)
    }

    /// Removes every field named `name` (any case).
    public mutating func remove(name: String) {
        fields.removeAll { HTTPHeaders.sameName($0.name, name) }
    }

    /// The number of fields.
    public var count: Int { fields.count }

    public func makeIterator() -> IndexingIterator<[Field]> { fields.makeIterator() }

    /// Names only: values may be secrets.
    public var description: String { "HTTPHeaders(\(fields.map(\.name).joined(separator: ", ")))" }

    /// ASCII case-insensitive comparison (header names are ASCII tokens).
    static func sameName(_ a: String, _ b: String) -> Bool {
        var left = a.utf8.makeIterator()
        var right = b.utf8.makeIterator()
        while true {
            switch (left.next(), right.next()) {
            case (nil, nil): return true
            case (let x?, let y?):
                if x == y { continue }
                if lowered(x) != lowered(y) { return false }
            default: return false
            }
        }
    }

    private static func lowered(_ c: UInt8) -> UInt8 { (c >= 65 && c <= 90) ? c + 32 : c }
}
