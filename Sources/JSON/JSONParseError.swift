/// Why a byte sequence is not an acceptable JSON document.
public struct JSONParseError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What went wrong.
    public enum Kind: Sendable, Equatable {
        /// The bytes are not JSON (syntax, encoding, trailing garbage, lone surrogate).
        case syntax
        /// Nesting deeper than the parser allows.
        case tooDeep
        /// An object names the same key twice (valid JSON grammar, refused by the domain).
        case duplicateKey(String)
        /// An object or array holds more members than the caller allows (the limit given).
        case tooManyMembers(Int)
    }

    /// What went wrong.
    public var kind: Kind
    /// Byte offset where it went wrong.
    public var offset: Int
    /// A short human explanation.
    public var reason: String

    public var description: String { "\(reason) at byte \(offset)" }
}
