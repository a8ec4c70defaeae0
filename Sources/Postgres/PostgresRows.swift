/// The rows a statement returned, decoded from PostgreSQL's text format.
public struct PostgresRows: Sendable, Sequence {
    public let columns: [String]
    public let rows: [PostgresRow]
    /// Rows affected by INSERT/UPDATE/DELETE (`PQcmdTuples`), 0 otherwise.
    public let affectedRows: Int

    public func makeIterator() -> IndexingIterator<[PostgresRow]> { rows.makeIterator() }
    public var count: Int { rows.count }
    public var isEmpty: Bool { rows.isEmpty }
    public var first: PostgresRow? { rows.first }
}

/// One row: the text value of each column (nil for NULL).
public struct PostgresRow: Sendable {
    public let values: [String?]
    let columnIndex: [String: Int]

    public subscript(_ index: Int) -> String? { values[index] }

    public subscript(_ name: String) -> String? {
        guard let i = columnIndex[name] else { return nil }
        return values[i]
    }

    public func string(_ column: String) throws -> String {
        guard let v = self[column] else { throw missing(column) }
        return v
    }

    public func int64(_ column: String) throws -> Int64 {
        guard let text = self[column], let v = Int64(text) else { throw missing(column) }
        return v
    }

    public func int(_ column: String) throws -> Int { Int(try int64(column)) }

    public func double(_ column: String) throws -> Double {
        guard let text = self[column], let v = Double(text) else { throw missing(column) }
        return v
    }

    public func bool(_ column: String) throws -> Bool {
        guard let text = self[column] else { throw missing(column) }
        return text == "t" || text == "true"
    }

    public func optionalInt64(_ column: String) -> Int64? { self[column].flatMap { Int64($0) } }
    public func optionalDouble(_ column: String) -> Double? { self[column].flatMap { Double($0) } }

    private func missing(_ column: String) -> PostgresError {
        PostgresError(code: .protocolViolation, message: "column \(column) is NULL, absent or not of the expected type")
    }
}
