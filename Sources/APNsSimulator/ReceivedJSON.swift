import Runtime

/// A JSON document as the simulator received it.
///
/// Numbers keep their literal text, so a recorded body re-encodes exactly as the client sent it
/// (`14.0` stays `14.0`) and the validator can tell an integer literal from a fractional one.
/// The parser is total: any byte sequence yields a value or `nil`, never a crash.
public enum ReceivedJSON: Sendable, Equatable, Hashable {
    case null
    case bool(Bool)
    /// The number's literal text, as it appeared in the document.
    case number(String)
    case string(String)
    case array([ReceivedJSON])
    /// Members in document order (duplicates kept; lookups take the last, as most decoders do).
    case object([(key: String, value: ReceivedJSON)])

    public static func == (a: ReceivedJSON, b: ReceivedJSON) -> Bool {
        switch (a, b) {
        case (.null, .null): return true
        case let (.bool(x), .bool(y)): return x == y
        case let (.number(x), .number(y)): return x == y
        case let (.string(x), .string(y)): return x == y
        case let (.array(x), .array(y)): return x == y
        case let (.object(x), .object(y)):
            return x.count == y.count && zip(x, y).allSatisfy { $0.key == $1.key && $0.value == $1.value }
        default: return false
        }
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(encoded())
    }

    /// The member named `key` of an object (the last one if repeated), else `nil`.
    public subscript(key: String) -> ReceivedJSON? {
        guard case .object(let members) = self else { return nil }
        return members.last(where: { $0.key == key })?.value
    }

    /// The string, if this is one.
    public var stringValue: String? {
        if case .string(let s) = self { return s }
        return nil
    }

    /// The number as a `Double`, if this is a number.
    public var doubleValue: Double? {
        if case .number(let text) = self { return Double(text) }
        return nil
    }

    /// The number as an integer, if this is a number with an integral value (`5`, `5.0`, `5e0`).
    public var integerValue: Int64? {
        guard case .number(let text) = self else { return nil }
        if let exact = Int64(text) { return exact }
        guard let d = Double(text), d.isFinite, d == d.rounded(), abs(d) < 9.0e15 else { return nil }
        return Int64(d)
    }

    /// True when this is an object.
    public var isObject: Bool {
        if case .object = self { return true }
        return false
    }

    /// Compact JSON text.
    public func encoded() -> String {
        var out = ""
        write(to: &out)
        return out
    }

    private func write(to out: inout String) {
        switch self {
        case .null: out += "null"
        case .bool(let b): out += b ? "true" : "false"
        case .number(let text): out += text
        case .string(let s): JSONString.appendQuoted(s, to: &out)
        case .array(let items):
            out += "["
            for (i, item) in items.enumerated() {
                if i > 0 { out += "," }
                item.write(to: &out)
            }
            out += "]"
        case .object(let members):
            out += "{"
            for (i, member) in members.enumerated() {
                if i > 0 { out += "," }
                JSONString.appendQuoted(member.key, to: &out)
                out += ":"
                member.value.write(to: &out)
            }
            out += "}"
        }
    }

    /// Parses one JSON document (RFC 8259) from `bytes`; `nil` when it is not exactly one valid document.
    public static func parse<Bytes: Collection>(_ bytes: Bytes) -> ReceivedJSON? where Bytes.Element == UInt8 {
        var parser = JSONParser(bytes: Array(bytes))
        return parser.parseDocument()
    }

    /// Parses one JSON document from a string.
    public static func parse(_ text: String) -> ReceivedJSON? { parse(Array(text.utf8)) }
}

/// A small recursive-descent parser with a depth limit, so hostile input cannot exhaust the stack.
private struct JSONParser {
    let bytes: [UInt8]
    var index = 0
    var depth = 0
    static let maximumDepth = 64

    init(bytes: [UInt8]) { self.bytes = bytes }

    mutating func parseDocument() -> ReceivedJSON? {
        skipWhitespace()
        guard let value = parseValue() else { return nil }
        skipWhitespace()
        return index == bytes.count ? value : nil
    }

    mutating func skipWhitespace() {
        while index < bytes.count {
            switch bytes[index] {
            case 0x20, 0x09, 0x0A, 0x0D: index += 1
            default: return
            }
        }
    }

    mutating func parseValue() -> ReceivedJSON? {
        guard index < bytes.count else { return nil }
        switch bytes[index] {
        case UInt8(ascii: "{"): return parseObject()
        case UInt8(ascii: "["): return parseArray()
        case UInt8(ascii: "\""): return parseString().map(ReceivedJSON.string)
        case UInt8(ascii: "t"): return literal("true", .bool(true))
        case UInt8(ascii: "f"): return literal("false", .bool(false))
        case UInt8(ascii: "n"): return literal("null", .null)
        default: return parseNumber()
        }
    }

    mutating func literal(_ word: String, _ value: ReceivedJSON) -> ReceivedJSON? {
        let w = Array(word.utf8)
        guard index + w.count <= bytes.count, Array(bytes[index..<index + w.count]) == w else { return nil }
        index += w.count
        return value
    }

    mutating func parseObject() -> ReceivedJSON? {
        depth += 1
        defer { depth -= 1 }
        guard depth <= JSONParser.maximumDepth else { return nil }
        index += 1
        var members: [(key: String, value: ReceivedJSON)] = []
        skipWhitespace()
        if index < bytes.count, bytes[index] == UInt8(ascii: "}") {
            index += 1
            return .object(members)
        }
        while true {
            skipWhitespace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: "\""), let key = parseString() else { return nil }
            skipWhitespace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: ":") else { return nil }
            index += 1
            skipWhitespace()
            guard let value = parseValue() else { return nil }
            members.append((key, value))
            skipWhitespace()
            guard index < bytes.count else { return nil }
            if bytes[index] == UInt8(ascii: ",") {
                index += 1
                continue
            }
            if bytes[index] == UInt8(ascii: "}") {
                index += 1
                return .object(members)
            }
            return nil
        }
    }

    mutating func parseArray() -> ReceivedJSON? {
        depth += 1
        defer { depth -= 1 }
        guard depth <= JSONParser.maximumDepth else { return nil }
        index += 1
        var items: [ReceivedJSON] = []
        skipWhitespace()
        if index < bytes.count, bytes[index] == UInt8(ascii: "]") {
            index += 1
            return .array(items)
        }
        while true {
            skipWhitespace()
            guard let value = parseValue() else { return nil }
            items.append(value)
            skipWhitespace()
            guard index < bytes.count else { return nil }
            if bytes[index] == UInt8(ascii: ",") {
                index += 1
                continue
            }
            if bytes[index] == UInt8(ascii: "]") {
                index += 1
                return .array(items)
            }
            return nil
        }
    }

    mutating func parseString() -> String? {
        index += 1  // opening quote
        // Fast path: no escapes before the closing quote (the common case for push payloads).
        var end = index
        while end < bytes.count {
            let byte = bytes[end]
            if byte == UInt8(ascii: "\"") {
                guard let s = bytes.withUnsafeBufferPointer({
                    String(validating: UnsafeBufferPointer(rebasing: $0[index..<end]), as: UTF8.self)
                }) else { return nil }
                index = end + 1
                return s
            }
            if byte == UInt8(ascii: "\\") || byte < 0x20 { break }
            end += 1
        }
        var scalars = String.UnicodeScalarView()
        var raw: [UInt8] = []
        func flush(_ raw: inout [UInt8], into scalars: inout String.UnicodeScalarView) -> Bool {
            guard !raw.isEmpty else { return true }
            guard let s = String(validating: raw, as: UTF8.self) else { return false }
            scalars.append(contentsOf: s.unicodeScalars)
            raw.removeAll(keepingCapacity: true)
            return true
        }
        while index < bytes.count {
            let byte = bytes[index]
            if byte == UInt8(ascii: "\"") {
                index += 1
                guard flush(&raw, into: &scalars) else { return nil }
                return String(scalars)
            }
            if byte < 0x20 { return nil }
            if byte == UInt8(ascii: "\\") {
                guard flush(&raw, into: &scalars), index + 1 < bytes.count else { return nil }
                let escape = bytes[index + 1]
                index += 2
                switch escape {
                case UInt8(ascii: "\""): scalars.append("\"")
                case UInt8(ascii: "\\"): scalars.append("\\")
                case UInt8(ascii: "/"): scalars.append("/")
                case UInt8(ascii: "b"): scalars.append("\u{08}")
                case UInt8(ascii: "f"): scalars.append("\u{0C}")
                case UInt8(ascii: "n"): scalars.append("\n")
                case UInt8(ascii: "r"): scalars.append("\r")
                case UInt8(ascii: "t"): scalars.append("\t")
                case UInt8(ascii: "u"):
                    guard var code = hex4() else { return nil }
                    if (0xD800...0xDBFF).contains(code) {
                        guard index + 1 < bytes.count, bytes[index] == UInt8(ascii: "\\"),
                            bytes[index + 1] == UInt8(ascii: "u")
                        else { return nil }
                        index += 2
                        guard let low = hex4(), (0xDC00...0xDFFF).contains(low) else { return nil }
                        code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00)
                    }
                    guard let scalar = Unicode.Scalar(code) else { return nil }
                    scalars.append(scalar)
                default: return nil
                }
                continue
            }
            raw.append(byte)
            index += 1
        }
        return nil
    }

    mutating func hex4() -> UInt32? {
        guard index + 4 <= bytes.count else { return nil }
        var value: UInt32 = 0
        for byte in bytes[index..<index + 4] {
            guard let digit = JSONParser.hexDigit(byte) else { return nil }
            value = value << 4 | UInt32(digit)
        }
        index += 4
        return value
    }

    static func hexDigit(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return byte - UInt8(ascii: "A") + 10
        default: return nil
        }
    }

    mutating func parseNumber() -> ReceivedJSON? {
        let start = index
        func isDigit(_ b: UInt8) -> Bool { b >= UInt8(ascii: "0") && b <= UInt8(ascii: "9") }
        if index < bytes.count, bytes[index] == UInt8(ascii: "-") { index += 1 }
        guard index < bytes.count, isDigit(bytes[index]) else { return nil }
        if bytes[index] == UInt8(ascii: "0") {
            index += 1
        } else {
            while index < bytes.count, isDigit(bytes[index]) { index += 1 }
        }
        if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
            index += 1
            guard index < bytes.count, isDigit(bytes[index]) else { return nil }
            while index < bytes.count, isDigit(bytes[index]) { index += 1 }
        }
        if index < bytes.count, bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E") {
            index += 1
            if index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") {
                index += 1
            }
            guard index < bytes.count, isDigit(bytes[index]) else { return nil }
            while index < bytes.count, isDigit(bytes[index]) { index += 1 }
        }
        return .number(String(decoding: bytes[start..<index], as: UTF8.self))
    }
}
