extension JSONValue {
    /// The deepest nesting of arrays and objects the parser accepts.
    public static let maximumDepth = 32

    /// The most members one object or array of a request body may hold (`parse(_:maximumMembers:)`).
    public static let requestMemberLimit = 1_000

    /// Parses one JSON document (RFC 8259, UTF-8) with nothing but whitespace around it, in time linear
    /// in its size.
    ///
    /// Refuses an object that names a key twice (`JSONParseError.Kind.duplicateKey`): the grammar
    /// allows it, but readers disagree on which value wins, so no part of the project accepts one.
    public static func parse(_ bytes: some Collection<UInt8>) throws(JSONParseError) -> JSONValue {
        try parse(bytes, maximumMembers: .max)
    }

    /// Parses one JSON document like `parse(_:)`, and refuses an object or array holding more than
    /// `maximumMembers` members (`JSONParseError.Kind.tooManyMembers`): what a client sends is bounded,
    /// what the project wrote itself is not.
    public static func parse(_ bytes: some Collection<UInt8>, maximumMembers: Int) throws(JSONParseError) -> JSONValue {
        let result: Result<JSONValue, JSONParseError>? = bytes.withContiguousStorageIfAvailable { buffer in
            Result { () throws(JSONParseError) -> JSONValue in try parse(buffer: buffer, maximumMembers: maximumMembers) }
        }
        if let result { return try result.get() }
        let copy = Array(bytes)
        return try copy.withUnsafeBufferPointer { buffer throws(JSONParseError) -> JSONValue in
            try parse(buffer: buffer, maximumMembers: maximumMembers)
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
        try parse(buffer: buffer, maximumMembers: .max)
    }

    /// Parses one JSON document from borrowed bytes, at most `maximumMembers` per object or array.
    public static func parse(buffer: UnsafeBufferPointer<UInt8>, maximumMembers: Int) throws(JSONParseError)
        -> JSONValue
    {
        var parser = JSONParser(bytes: buffer, maximumMembers: maximumMembers)
        parser.skipWhitespace()
        let value = try parser.parseValue(depth: 0)
        parser.skipWhitespace()
        guard parser.index == buffer.count else { throw parser.error("unexpected data after the JSON value") }
        return value
    }
}
