extension JSONValue {
    /// The compact UTF-8 encoding of this value, members in their stored order.
    ///
    /// Numbers: an integral value of magnitude below 2^53 is written without a fraction
    /// (`14`, `0`, `1790000300`), anything else in Swift's shortest round-trip form (`1.2`).
    /// Strings escape `"`, `\` and control characters; everything else is written as UTF-8.
    public func serialized() -> [UInt8] {
        var output: [UInt8] = []
        output.reserveCapacity(256)
        write(to: &output)
        return output
    }

    /// The compact encoding as a `String`.
    public func serializedString() -> String {
        String(decoding: serialized(), as: UTF8.self)
    }

    /// Appends the compact encoding to `output`.
    public func write(to output: inout [UInt8]) {
        switch self {
        case .null: output.append(contentsOf: "null".utf8)
        case .bool(let value): output.append(contentsOf: (value ? "true" : "false").utf8)
        case .number(let value): JSONValue.writeNumber(value, to: &output)
        case .string(let value): JSONValue.writeString(value, to: &output)
        case .array(let elements):
            output.append(UInt8(ascii: "["))
            var first = true
            for element in elements {
                if !first { output.append(UInt8(ascii: ",")) }
                first = false
                element.write(to: &output)
            }
            output.append(UInt8(ascii: "]"))
        case .object(let members):
            output.append(UInt8(ascii: "{"))
            var first = true
            for member in members {
                if !first { output.append(UInt8(ascii: ",")) }
                first = false
                JSONValue.writeString(member.key, to: &output)
                output.append(UInt8(ascii: ":"))
                member.value.write(to: &output)
            }
            output.append(UInt8(ascii: "}"))
        }
    }

    /// The encoding with one member or element per line, indented by two spaces, for files people
    /// read (the demo's record). Scalars are written as `serialized()` writes them.
    public func indentedSerialized() -> [UInt8] {
        var output: [UInt8] = []
        writeIndented(to: &output, level: 0)
        output.append(0x0A)
        return output
    }

    private func writeIndented(to output: inout [UInt8], level: Int) {
        func newline(_ level: Int) {
            output.append(0x0A)
            output.append(contentsOf: repeatElement(UInt8(ascii: " "), count: 2 * level))
        }
        switch self {
        case .array(let elements) where !elements.isEmpty:
            output.append(UInt8(ascii: "["))
            for (position, element) in elements.enumerated() {
                if position > 0 { output.append(UInt8(ascii: ",")) }
                newline(level + 1)
                element.writeIndented(to: &output, level: level + 1)
            }
            newline(level)
            output.append(UInt8(ascii: "]"))
        case .object(let members) where !members.isEmpty:
            output.append(UInt8(ascii: "{"))
            for (position, member) in members.enumerated() {
                if position > 0 { output.append(UInt8(ascii: ",")) }
                newline(level + 1)
                JSONValue.writeString(member.key, to: &output)
                output.append(contentsOf: ": ".utf8)
                member.value.writeIndented(to: &output, level: level + 1)
            }
            newline(level)
            output.append(UInt8(ascii: "}"))
        default:
            write(to: &output)
        }
    }

    /// Appends a number as `serialized()` writes it; a non-finite value (which JSON cannot hold) as `null`.
    public static func writeNumber(_ value: Double, to output: inout [UInt8]) {
        guard value.isFinite else {
            // JSON has no infinities; the domain never produces one (inputs are bounded).
            output.append(contentsOf: "null".utf8)
            return
        }
        if value == value.rounded(.towardZero), abs(value) < exactIntegerBound {
            writeInteger(Int64(value), to: &output)
        } else {
            output.append(contentsOf: value.description.utf8)
        }
    }

    /// Appends the decimal digits of `value` (no intermediate `String`: numbers are on every body's path).
    public static func writeInteger(_ value: Int64, to output: inout [UInt8]) {
        var magnitude = value.magnitude
        if value < 0 { output.append(UInt8(ascii: "-")) }
        if magnitude < 10 {
            output.append(UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: magnitude))
            return
        }
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 20) { digits in
            var start = 20
            while magnitude > 0 {
                start -= 1
                digits[start] = UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: magnitude % 10)
                magnitude /= 10
            }
            output.append(contentsOf: UnsafeBufferPointer(rebasing: digits[start..<20]))
        }
    }

    /// Appends `value` as a JSON string literal: `"`, `\` and control characters escaped (`\n`, `\r`,
    /// `\t`, else `\u00XX`), everything else as its UTF-8 bytes. The one JSON escaper of the project.
    public static func writeString(_ value: String, to output: inout [UInt8]) {
        output.append(UInt8(ascii: "\""))
        let done: Void? = value.utf8.withContiguousStorageIfAvailable { bytes in
            appendEscaped(bytes, to: &output)
        }
        if done == nil {
            for byte in value.utf8 {
                if needsEscape(byte) { appendEscape(byte, to: &output) } else { output.append(byte) }
            }
        }
        output.append(UInt8(ascii: "\""))
    }

    /// `value` as a JSON string literal, for code that composes text.
    public static func quoted(_ value: String) -> String {
        var output: [UInt8] = []
        output.reserveCapacity(value.utf8.count + 2)
        writeString(value, to: &output)
        return String(decoding: output, as: UTF8.self)
    }

    @inline(__always)
    private static func needsEscape(_ byte: UInt8) -> Bool {
        byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\")
    }

    /// Copies runs of bytes that need no escape in one go.
    private static func appendEscaped(_ bytes: UnsafeBufferPointer<UInt8>, to output: inout [UInt8]) {
        var runStart = 0
        for index in 0..<bytes.count where needsEscape(bytes[index]) {
            if runStart < index { output.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[runStart..<index])) }
            appendEscape(bytes[index], to: &output)
            runStart = index + 1
        }
        if runStart < bytes.count { output.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[runStart...])) }
    }

    private static func appendEscape(_ byte: UInt8, to output: inout [UInt8]) {
        output.append(UInt8(ascii: "\\"))
        switch byte {
        case UInt8(ascii: "\""), UInt8(ascii: "\\"): output.append(byte)
        case 0x0A: output.append(UInt8(ascii: "n"))
        case 0x0D: output.append(UInt8(ascii: "r"))
        case 0x09: output.append(UInt8(ascii: "t"))
        default:
            func hex(_ nibble: UInt8) -> UInt8 { nibble < 10 ? UInt8(ascii: "0") + nibble : UInt8(ascii: "a") + nibble - 10 }
            output.append(UInt8(ascii: "u"))
            output.append(UInt8(ascii: "0"))
            output.append(UInt8(ascii: "0"))
            output.append(hex(byte >> 4))
            output.append(hex(byte & 0xF))
        }
    }
}
