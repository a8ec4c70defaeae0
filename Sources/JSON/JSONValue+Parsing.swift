extension JSONValue {
    /// The deepest nesting of arrays and objects the parser accepts.
    public static let maximumDepth = 32

    /// Parses one JSON document (RFC 8259, UTF-8) with nothing but whitespace around it.
    ///
    /// Refuses an object that names a key twice (`JSONParseError.Kind.duplicateKey`): the grammar
    /// allows it, but readers disagree on which value wins, so no part of the project accepts one.
    public static func parse(_ bytes: some Collection<UInt8>) throws(JSONParseError) -> JSONValue {
        let result: Result<JSONValue, JSONParseError>? = bytes.withContiguousStorageIfAvailable { buffer in
            Result { () throws(JSONParseError) -> JSONValue in try parse(buffer: buffer) }
        }
        if let result { return try result.get() }
        let copy = Array(bytes)
        return try copy.withUnsafeBufferPointer { buffer throws(JSONParseError) -> JSONValue in
            try parse(buffer: buffer)
        }
    }

    /// Parses one JSON document held in a string.
    public static func parse(_ text: String) throws(JSONParseError) -> JSONValue {
        var text = text
        let result = text.withUTF8 { buffer in
            Result { () throws(JSONParseError) -> JSONValue in try parse(buffer: buffer) }
        }
        return try result.get()
    }

    /// Parses one JSON document from borrowed bytes (the replay path: libpq's result memory).
    public static func parse(buffer: UnsafeBufferPointer<UInt8>) throws(JSONParseError) -> JSONValue {
        var parser = JSONParser(bytes: buffer)
        parser.skipWhitespace()
        let value = try parser.parseValue(depth: 0)
        parser.skipWhitespace()
        guard parser.index == buffer.count else { throw parser.error("unexpected data after the JSON value") }
        return value
    }
}
