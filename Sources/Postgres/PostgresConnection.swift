import CLibPQ
import Foundation

/// One libpq connection. Synchronous: it is only ever used on the thread of the pool slot (or listener)
/// that owns it, so blocking calls never touch Swift's cooperative pool. Not Sendable on purpose.
public final class PostgresConnection {
    let conn: OpaquePointer
    private var prepared: [StatementText: String] = [:]
    private let usePreparedStatements: Bool
    /// The session's `plan_cache_mode` as this connection last set it (prepared statements only); nil when not
    /// known: a new session, or after a failure or a script that may have undone a setting.
    private(set) var sessionPlanning: PostgresQuery.Planning?
    /// The session's `enable_seqscan` and `jit` as configured (`plannerDefaults()`), once read.
    private var readPlannerDefaults: PostgresQuery.PlannerDefaults?

    /// Opens a connection; throws `.unavailable` when the server cannot be reached.
    public init(url: String, connectTimeoutSeconds: Int = 5, usePreparedStatements: Bool = true) throws {
        let conninfo = PostgresConnection.connectionString(url, connectTimeoutSeconds: connectTimeoutSeconds)
        guard let conn = PQconnectdb(conninfo) else {
            throw PostgresError(code: .unavailable, message: "out of memory opening a connection")
        }
        guard PQstatus(conn) == CONNECTION_OK else {
            let message = PostgresConnection.firstLine(PQerrorMessage(conn))
            PQfinish(conn)
            throw PostgresError(code: .unavailable, message: "cannot connect to PostgreSQL: \(message)")
        }
        clibpq_silence_notices(conn)
        self.conn = conn
        self.usePreparedStatements = usePreparedStatements
    }

    deinit { PQfinish(conn) }

    /// Cancels this connection's running statement from another thread (made on first use, on this
    /// connection's thread).
    lazy var cancelKey: PostgresCancelKey? = PostgresCancelKey(connection: conn)

    /// Set when a pipeline could not be brought back to normal mode: the pool must replace it.
    private var broken = false

    /// False once the server has gone away (or a pipeline left the connection unusable); the pool
    /// replaces such a connection.
    public var isHealthy: Bool { !broken && PQstatus(conn) == CONNECTION_OK }

    /// True while a transaction block is open (or failed) on this connection.
    public var inTransaction: Bool {
        let s = PQtransactionStatus(conn)
        return s == PQTRANS_INTRANS || s == PQTRANS_INERROR || s == PQTRANS_ACTIVE
    }

    /// The libpq socket, for `poll` in the listener.
    var socket: Int32 { PQsocket(conn) }

    /// Runs one parameterized statement (extended protocol; prepared once per connection and SQL text).
    @discardableResult
    public func query(_ query: PostgresQuery) throws -> PostgresRows {
        if query.plannedDifferently(from: usePreparedStatements ? sessionPlanning : .chosenByServer) {
            return try pipeline([query])[0]
        }
        let result: OpaquePointer?
        if usePreparedStatements {
            let statement = StatementText(query)
            let name = try preparedName(for: statement, of: query)
            result = PostgresConnection.withParameters(query.binds, types: statement.types) { p in
                PQexecPrepared(conn, name, p.count, p.values, p.lengths, p.formats, 0)
            }
        } else {
            result = PostgresConnection.withParameters(query.binds, types: query.declaredTypes) { p in
                PQexecParams(conn, query.sql, p.count, p.types, p.values, p.lengths, p.formats, 0)
            }
        }
        return try consume(result)
    }

    /// Runs several parameterized statements in one round trip (libpq pipeline mode) and returns their
    /// results in order. Outside a transaction block the statements form one implicit transaction that
    /// commits at the pipeline's sync point: all of them or none. Inside `transaction { }` they are simply
    /// part of it. The first statement that fails stops the rest (PostgreSQL skips them) and its error is
    /// thrown. A statement runs under its own `planning`: with prepared statements (a session of our own) the
    /// session's `plan_cache_mode` is set when it must change and kept (`sessionPlanning`), so a connection
    /// that runs the same statements again sets nothing; without (behind a transaction pooler, where a session
    /// setting would outlive the transaction on a server connection others share) a flagged statement runs
    /// between two transaction-local settings.
    @discardableResult
    public func pipeline(_ queries: [PostgresQuery]) throws -> [PostgresRows] {
        if usePreparedStatements {
            guard queries.contains(where: { $0.plannedDifferently(from: sessionPlanning) }) else { return try send(queries) }
            let (sent, positions, after) = PostgresQuery.withSessionPlanModes(
                queries, from: sessionPlanning, defaults: plannerDefaults())
            do {
                let results = try send(sent)
                sessionPlanning = after
                return positions.map { results[$0] }
            } catch {
                // A failed pipeline's transaction takes its settings with it.
                sessionPlanning = nil
                throw error
            }
        }
        guard queries.contains(where: { $0.plannedDifferently(from: .chosenByServer) }) else { return try send(queries) }
        let (sent, positions) = PostgresQuery.withPlanModes(queries, defaults: plannerDefaults())
        let results = try send(sent)
        return positions.map { results[$0] }
    }

    /// What statements not planned `once` are planned under (`PostgresQuery.setting`), read from the server
    /// once per connection (a value that cannot be read now is read at the next need).
    private func plannerDefaults() -> PostgresQuery.PlannerDefaults {
        if let readPlannerDefaults { return readPlannerDefaults }
        let sql = "SELECT name, reset_val FROM pg_settings WHERE name IN ('enable_seqscan', 'enable_bitmapscan', 'jit')"
        guard let rows = try? consume(PQexec(conn, sql)), rows.count == 3 else { return .init() }
        var defaults = PostgresQuery.PlannerDefaults()
        for row in rows.rows {
            let value = row["reset_val"] ?? "on"
            switch row["name"] {
            case "jit": defaults.jit = value
            case "enable_bitmapscan": defaults.bitmapScans = value
            default: defaults.sequentialScans = value
            }
        }
        readPlannerDefaults = defaults
        return defaults
    }

    private func send(_ queries: [PostgresQuery]) throws -> [PostgresRows] {
        if queries.count == 1 { return [try query(queries[0])] }
        if queries.isEmpty { return [] }
        if usePreparedStatements && prepared.count + queries.count > 512 {
            try execute(script: "DEALLOCATE ALL")
            prepared.removeAll()
        }
        guard PQenterPipelineMode(conn) == 1 else {
            broken = true
            throw connectionError(PostgresConnection.firstLine(PQerrorMessage(conn)))
        }
        // What was sent, in order: a Parse for a statement not yet prepared, or a statement to run.
        enum Sent {
            case prepare(StatementText, name: String)
            case run(index: Int)
        }
        var sent: [Sent] = []
        var names = prepared
        var sendFailed = false
        for (index, query) in queries.enumerated() {
            var ok: Int32 = 1
            if usePreparedStatements {
                let name: String
                let statement = StatementText(query)
                if let known = names[statement] {
                    name = known
                } else {
                    name = "lv\(names.count)"
                    names[statement] = name
                    ok = statement.withTypes { types in
                        PQsendPrepare(conn, name, query.sql, Int32(query.binds.count), types)
                    }
                    sent.append(.prepare(statement, name: name))
                }
                if ok == 1 {
                    ok = PostgresConnection.withParameters(query.binds, types: statement.types) { p in
                        PQsendQueryPrepared(conn, name, p.count, p.values, p.lengths, p.formats, 0)
                    }
                }
            } else {
                ok = PostgresConnection.withParameters(query.binds, types: query.declaredTypes) { p in
                    PQsendQueryParams(conn, query.sql, p.count, p.types, p.values, p.lengths, p.formats, 0)
                }
            }
            guard ok == 1 else {
                sendFailed = true
                break
            }
            sent.append(.run(index: index))
        }
        if sendFailed || PQpipelineSync(conn) != 1 {
            let message = PostgresConnection.firstLine(PQerrorMessage(conn))
            broken = true  // what was sent and what runs is unknown
            throw connectionError(message)
        }
        var results = [PostgresRows?](repeating: nil, count: queries.count)
        var failure: (any Error)?
        for item in sent {
            // One result per command, then NULL. No result at all means the connection is gone.
            guard let result = PQgetResult(conn) else {
                broken = true
                throw connectionError(PostgresConnection.firstLine(PQerrorMessage(conn)))
            }
            while let extra = PQgetResult(conn) { PQclear(extra) }
            if PQresultStatus(result) == PGRES_PIPELINE_ABORTED {
                PQclear(result)
                continue
            }
            switch item {
            case .prepare(let statement, let name):
                do {
                    _ = try consume(result)
                    prepared[statement] = name
                } catch {
                    if failure == nil { failure = error }
                }
            case .run(let index):
                do {
                    results[index] = try consume(result)
                } catch {
                    if failure == nil { failure = error }
                }
            }
        }
        // Then the sync point, where the implicit transaction commits. An error before it (the commit
        // failed, or the connection went away while committing) means the statements did not stand, or
        // that nobody knows: never report success without seeing the sync.
        var emptyReads = 0
        while true {
            guard let result = PQgetResult(conn) else {
                emptyReads += 1
                if emptyReads > 1 || PQstatus(conn) != CONNECTION_OK {
                    broken = true
                    throw connectionError(
                        "no answer at the pipeline's sync point: " + PostgresConnection.firstLine(PQerrorMessage(conn)))
                }
                continue
            }
            emptyReads = 0
            if PQresultStatus(result) == PGRES_PIPELINE_SYNC {
                PQclear(result)
                break
            }
            do {
                _ = try consume(result)
            } catch {
                if failure == nil { failure = error }
            }
        }
        if PQexitPipelineMode(conn) != 1 {
            broken = true
            throw connectionError("cannot leave pipeline mode: " + PostgresConnection.firstLine(PQerrorMessage(conn)))
        }
        if let failure { throw failure }
        return results.map { $0 ?? PostgresRows(columns: [], rows: [], affectedRows: 0) }
    }

    /// Runs SQL text with no parameters over the simple protocol (several statements allowed). For
    /// migrations and fixed statements only: never build this text from input.
    public func execute(script: String) throws {
        // A script may end a transaction (ROLLBACK undoes a setting made in it) or reset the session.
        sessionPlanning = nil
        let result = PQexec(conn, script)
        _ = try consume(result)
    }

    /// Runs `body` inside BEGIN … COMMIT; any error rolls back and is rethrown.
    public func transaction<T>(_ body: (PostgresConnection) throws -> T) throws -> T {
        try execute(script: "BEGIN")
        do {
            let value = try body(self)
            try execute(script: "COMMIT")
            return value
        } catch {
            if isHealthy { try? execute(script: "ROLLBACK") }
            throw error
        }
    }

    // MARK: LISTEN/NOTIFY support

    func consumeInput() -> Bool { PQconsumeInput(conn) == 1 }

    func nextNotification() -> (channel: String, payload: String)? {
        guard let n = PQnotifies(conn) else { return nil }
        defer { PQfreemem(n) }
        return (String(cString: n.pointee.relname), String(cString: n.pointee.extra))
    }

    // MARK: private

    private func preparedName(for statement: StatementText, of query: PostgresQuery) throws -> String {
        if let name = prepared[statement] { return name }
        if prepared.count >= 512 {
            try execute(script: "DEALLOCATE ALL")
            prepared.removeAll()
        }
        let name = "lv\(prepared.count)"
        let result = statement.withTypes { types in PQprepare(conn, name, query.sql, Int32(query.binds.count), types) }
        _ = try consume(result)
        prepared[statement] = name
        return name
    }

    func consume(_ result: OpaquePointer?) throws -> PostgresRows {
        guard let result else {
            throw connectionError(PostgresConnection.firstLine(PQerrorMessage(conn)))
        }
        defer { PQclear(result) }
        switch PQresultStatus(result) {
        case PGRES_COMMAND_OK, PGRES_EMPTY_QUERY:
            return PostgresRows(columns: [], rows: [], affectedRows: PostgresConnection.affected(result))
        case PGRES_TUPLES_OK, PGRES_SINGLE_TUPLE:
            return PostgresConnection.rows(result)
        default:
            let sqlState = PQresultErrorField(result, Int32(UInt8(ascii: "C"))).map { String(cString: $0) }
            let primary = PQresultErrorField(result, Int32(UInt8(ascii: "M"))).map { String(cString: $0) }
            let constraint = PQresultErrorField(result, Int32(UInt8(ascii: "n"))).map { String(cString: $0) }
            let message = primary ?? PostgresConnection.firstLine(PQresultErrorMessage(result))
            if !isHealthy && sqlState == nil { throw connectionError(message) }
            if sqlState == "26000" { prepared.removeAll() }  // a pooler dropped our prepared statements
            throw PostgresError.classify(sqlState: sqlState, message: message, constraint: constraint)
        }
    }

    private func connectionError(_ message: String) -> PostgresError {
        PostgresError(code: .unavailable, message: "connection to PostgreSQL lost: \(message)")
    }

    private static func rows(_ result: OpaquePointer) -> PostgresRows {
        let rowCount = Int(PQntuples(result))
        let columnCount = Int(PQnfields(result))
        var columns: [String] = []
        columns.reserveCapacity(columnCount)
        var index: [String: Int] = [:]
        for c in 0..<columnCount {
            let name = String(cString: PQfname(result, Int32(c)))
            columns.append(name)
            if index[name] == nil { index[name] = c }
        }
        var rows: [PostgresRow] = []
        rows.reserveCapacity(rowCount)
        for r in 0..<rowCount {
            var values: [String?] = []
            values.reserveCapacity(columnCount)
            for c in 0..<columnCount {
                if PQgetisnull(result, Int32(r), Int32(c)) == 1 {
                    values.append(nil)
                } else {
                    let length = Int(PQgetlength(result, Int32(r), Int32(c)))
                    let pointer = UnsafeRawPointer(PQgetvalue(result, Int32(r), Int32(c))!)
                    values.append(String(decoding: UnsafeRawBufferPointer(start: pointer, count: length), as: UTF8.self))
                }
            }
            rows.append(PostgresRow(values: values, columnIndex: index))
        }
        return PostgresRows(columns: columns, rows: rows, affectedRows: affected(result))
    }

    private static func affected(_ result: OpaquePointer) -> Int {
        guard let text = PQcmdTuples(result) else { return 0 }
        return Int(String(cString: text)) ?? 0
    }

    static func firstLine(_ message: UnsafePointer<CChar>?) -> String {
        guard let message else { return "unknown error" }
        let text = String(cString: message).trimmingCharacters(in: .whitespacesAndNewlines)
        return text.split(separator: "\n").first.map(String.init) ?? text
    }

    /// The connection string libpq is given: `url` with `connect_timeout` and the session option `jit=off`
    /// added, each unless the URL names it (`connect_timeout`, `options`) itself.
    ///
    /// JIT is off because every statement of the product is short: PostgreSQL compiles a plan whose estimate
    /// passes `jit_above_cost`, and an estimate inflated by a guess (a CTE's row count, a table not yet
    /// analysed) made a statement that ran in a millisecond spend seconds of CPU compiling, on a machine
    /// whose cores the pushes needed. A startup option makes it the session's reset value, which the
    /// planner settings of `PostgresQuery.setting` put back after a statement planned `once`.
    static func connectionString(_ url: String, connectTimeoutSeconds seconds: Int) -> String {
        let isURI = url.hasPrefix("postgres://") || url.hasPrefix("postgresql://")
        var out = url
        func add(_ key: String, uriValue: String, keywordValue: String) {
            guard !url.contains(key) else { return }
            if isURI {
                out += (out.contains("?") ? "&" : "?") + "\(key)=\(uriValue)"
            } else {
                out += " \(key)=\(keywordValue)"
            }
        }
        add("connect_timeout", uriValue: String(seconds), keywordValue: String(seconds))
        add("options", uriValue: "-c%20jit%3Doff", keywordValue: "'-c jit=off'")
        return out
    }

    /// Binds as libpq takes them: each value's bytes (NUL-terminated text, or binary with its length), and —
    /// only when some are binary — the lengths, the formats (0 text, 1 binary) and the declared types (0 for
    /// text: PostgreSQL infers it).
    struct Parameters {
        var count: Int32
        var values: [UnsafePointer<CChar>?]
        var lengths: UnsafePointer<Int32>?
        var formats: UnsafePointer<Int32>?
        var types: UnsafePointer<Oid>?
    }

    /// `types`: the binds' declared types (`PostgresQuery.declaredTypes`), empty when all are text.
    private static func withParameters<R>(_ binds: [PostgresBind], types: [UInt32], _ body: (Parameters) -> R) -> R {
        // Lengths and formats only when some bind is binary.
        let binary = !types.isEmpty
        var pointers: [UnsafeMutablePointer<CChar>?] = []
        var lengths: [Int32] = []
        var formats: [Int32] = []
        pointers.reserveCapacity(binds.count)
        for bind in binds {
            switch bind {
            case .text(let text):
                pointers.append(text.map { strdup($0)! })
                if binary {
                    lengths.append(0)
                    formats.append(0)
                }
            case .binary(_, let bytes):
                let copy = malloc(max(bytes.count, 1))!.assumingMemoryBound(to: CChar.self)
                bytes.withUnsafeBytes { if let base = $0.baseAddress { memcpy(copy, base, bytes.count) } }
                pointers.append(copy)
                lengths.append(Int32(bytes.count))
                formats.append(1)
            }
        }
        defer { for p in pointers { free(p) } }
        let values = pointers.map { $0.map { UnsafePointer($0) } }
        guard binary else { return body(Parameters(count: Int32(binds.count), values: values)) }
        return lengths.withUnsafeBufferPointer { l in
            formats.withUnsafeBufferPointer { f in
                types.withUnsafeBufferPointer { t in
                    body(
                        Parameters(
                            count: Int32(binds.count), values: values, lengths: l.baseAddress, formats: f.baseAddress,
                            types: t.baseAddress))
                }
            }
        }
    }
}

/// A statement's SQL as the key of the prepared-statement cache: hashed and compared as its UTF-8 bytes.
/// A `String` key hashes the text's Unicode-normalized form, and one non-ASCII character anywhere in it
/// (a `§` or `—` in an SQL comment) sends every lookup down Swift's slow normalizing path: with a
/// group-commit batch's dozens of kilobyte-long statements that was about a fifth of the batch's CPU.
struct StatementText: Hashable {
    let sql: String
    /// The parameter types declared when it is prepared: none unless a bind is binary (`PostgresBind.binary`), so a
    /// statement sent once with text and once with binary binds is prepared twice, each with its types.
    let types: [UInt32]

    init(_ query: PostgresQuery) {
        sql = query.sql
        types = query.declaredTypes
    }

    /// The declared types for libpq (nil when there are none: PostgreSQL infers every one).
    func withTypes<R>(_ body: (UnsafePointer<Oid>?) -> R) -> R {
        types.isEmpty ? body(nil) : types.withUnsafeBufferPointer { body($0.baseAddress) }
    }

    static func == (a: StatementText, b: StatementText) -> Bool {
        guard a.types == b.types else { return false }
        var x = a.sql
        var y = b.sql
        return x.withUTF8 { p in
            y.withUTF8 { q in p.count == q.count && (p.count == 0 || memcmp(p.baseAddress!, q.baseAddress!, p.count) == 0) }
        }
    }

    func hash(into hasher: inout Hasher) {
        var text = sql
        text.withUTF8 { hasher.combine(bytes: UnsafeRawBufferPointer($0)) }
        hasher.combine(types)
    }
}
