/// An error from the database layer. `code` says what kind; `sqlState` carries PostgreSQL's own code.
public struct PostgresError: Error, CustomStringConvertible, Sendable {
    /// A small, extensible set of error kinds.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Kind: String, Sendable {
            case unavailable, poolTimeout, query, uniqueViolation, serializationFailure, protocolViolation
        }
        private let kind: Kind
        /// The database cannot be reached (refused, down, restarting, connection lost).
        public static let unavailable = Code(kind: .unavailable)
        /// No pooled connection became free in time.
        public static let poolTimeout = Code(kind: .poolTimeout)
        /// The statement failed (syntax, constraint other than unique, …).
        public static let query = Code(kind: .query)
        /// A unique constraint refused the row (SQLSTATE 23505).
        public static let uniqueViolation = Code(kind: .uniqueViolation)
        /// Serialization failure or deadlock (40001, 40P01): retrying the transaction may succeed.
        public static let serializationFailure = Code(kind: .serializationFailure)
        /// A result could not be read as the type asked for.
        public static let protocolViolation = Code(kind: .protocolViolation)
        public var description: String { kind.rawValue }
    }

    public let code: Code
    public let message: String
    public let sqlState: String?
    /// The name of the violated constraint, when PostgreSQL reports one.
    public let constraint: String?

    public init(code: Code, message: String, sqlState: String? = nil, constraint: String? = nil) {
        self.code = code
        self.message = message
        self.sqlState = sqlState
        self.constraint = constraint
    }

    public var description: String {
        "PostgresError(\(code)\(sqlState.map { ", sqlstate \($0)" } ?? ""): \(message)"
    }

    /// SQLSTATE `read_only_sql_transaction`: a write reached a server in recovery or read-only.
    public static let readOnlySQLState = "25006"

    /// True when the database (not the statement) is the problem.
    public var isUnavailable: Bool { code == .unavailable || code == .poolTimeout }

    /// The statement was cancelled (57014 query_canceled): by the pool's work timeout, or a `statement_timeout`.
    public var wasCancelled: Bool { sqlState == "57014" }

    static func classify(sqlState: String?, message: String, constraint: String?) -> PostgresError {
        let code: Code
        switch sqlState {
        case "23505"?: code = .uniqueViolation
        case "40001"?, "40P01"?: code = .serializationFailure
        // 25006 read_only_sql_transaction: the server is (now) a standby, e.g. a demoted primary; as
        // good as gone for a writer, which must find the primary again (`PostgresPool` drops the connection).
        case let s?
        where s.hasPrefix("08") || s == "57P01" || s == "57P02" || s == "57P03" || s.hasPrefix("53") || s == readOnlySQLState:
            code = .unavailable
        default: code = .query
        }
        return PostgresError(code: code, message: message, sqlState: sqlState, constraint: constraint)
    }
}
