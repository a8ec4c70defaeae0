/// The one grammar of ids (contract §15): `visitId`, `customerId`, `technician.id`, `deviceId`, `activityId`
/// and API key subjects are 1 to 128 bytes of URL-unreserved characters, `A–Z a–z 0–9 . _ ~ -`.
///
/// Every id a client sends is checked here, so an id accepted in a body is always one a path can name (a
/// customer booked under an id can be erased by it). A body answers an id outside the grammar with
/// `VisitInputError.Code.invalidId`; a path answers it as not found.
public enum IdGrammar {
    /// The longest id, in bytes.
    public static let maximumBytes = 128

    /// What an id must be, as refusals say it.
    public static let requirement = "expected 1 to 128 of A-Z a-z 0-9 . _ ~ -"

    /// Whether `value` is an id.
    public static func accepts(_ value: String) -> Bool {
        !value.isEmpty && value.utf8.count <= maximumBytes && value.utf8.allSatisfy(isIdByte)
    }

    private static func isIdByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"),
            UInt8(ascii: "~"):
            true
        default: false
        }
    }
}

extension JSONObjectReader {
    /// A required id (`IdGrammar`); one outside the grammar is refused as `invalidId` naming the field.
    public func id(_ key: String) throws(VisitInputError) -> String {
        let value = try VisitInputError.reading { () throws(FieldProblem) in try string(key) }
        guard IdGrammar.accepts(value) else {
            let field = fieldPath(key)
            throw VisitInputError(code: .invalidId, field: field, message: "\(field): \(IdGrammar.requirement)")
        }
        return value
    }

    /// An optional id, checked like `id(_:)` when present (absent or `null`: nil).
    public func optionalId(_ key: String) throws(VisitInputError) -> String? {
        guard value(key) != nil else { return nil }
        return try id(key)
    }
}
