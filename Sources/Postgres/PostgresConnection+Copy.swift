import CLibPQ
import Foundation

/// COPY over the connection (text format): the bulk path for a replay, which reads the whole log and
/// writes a whole table. No bind parameters exist for COPY, so the SQL must be fixed text (never built from
/// input), like `execute(script:)`.
extension PostgresConnection {
    /// Runs `COPY (…) TO STDOUT` and hands each row's bytes (one line of COPY text, `\n` included) to `row`
    /// as it arrives, so the caller's work overlaps PostgreSQL's. An error thrown by `row` cancels the COPY
    /// and is rethrown once the connection is usable again. Returns the rows copied.
    @discardableResult
    public func copyOut(_ sql: String, row: (UnsafeRawBufferPointer) throws -> Void) throws -> Int {
        try startCopy(sql, expecting: PGRES_COPY_OUT)
        var rows = 0
        var failure: (any Error)?
        while true {
            var buffer: UnsafeMutablePointer<CChar>? = nil
            let length = PQgetCopyData(conn, &buffer, 0)
            if length > 0, let buffer {
                defer { PQfreemem(buffer) }
                guard failure == nil else { continue }
                do {
                    try row(UnsafeRawBufferPointer(start: buffer, count: Int(length)))
                    rows += 1
                } catch {
                    // Stop the server's side; the rows already on their way are drained and dropped.
                    failure = error
                    cancelRunningStatement()
                }
                continue
            }
            break  // -1: done (the final result follows); -2: failed (ditto)
        }
        let outcome = finishCopy()
        if let failure { throw failure }
        try outcome.get()
        return rows
    }

    /// Runs `COPY … FROM STDIN`: `body` sends the data through `send` (COPY text, whole lines); the COPY
    /// ends when `body` returns, or is aborted (nothing of it stands) when `body` throws.
    public func copyIn(_ sql: String, body: (_ send: (UnsafeRawBufferPointer) throws -> Void) throws -> Void) throws {
        try startCopy(sql, expecting: PGRES_COPY_IN)
        do {
            try body { bytes in
                guard bytes.count > 0 else { return }
                let sent = PQputCopyData(conn, bytes.baseAddress!.assumingMemoryBound(to: CChar.self), Int32(bytes.count))
                guard sent == 1 else {
                    throw PostgresError(
                        code: .unavailable, message: "COPY failed: " + PostgresConnection.firstLine(PQerrorMessage(conn)))
                }
            }
        } catch {
            _ = PQputCopyEnd(conn, "aborted by the client")
            _ = finishCopy()
            throw error
        }
        guard PQputCopyEnd(conn, nil) == 1 else {
            _ = finishCopy()
            throw PostgresError(code: .unavailable, message: "COPY failed: " + PostgresConnection.firstLine(PQerrorMessage(conn)))
        }
        try finishCopy().get()
    }

    private func startCopy(_ sql: String, expecting status: ExecStatusType) throws {
        let result = PQexec(conn, sql)
        if let result, PQresultStatus(result) == status {
            PQclear(result)
            return
        }
        _ = try consume(result)  // throws the error it carries
        throw PostgresError(
            code: .protocolViolation,
            message: "the statement is not a COPY \(status == PGRES_COPY_IN ? "FROM STDIN" : "TO STDOUT")")
    }

    /// Reads the COPY's final result(s) until libpq has none left.
    private func finishCopy() -> Result<Void, any Error> {
        var outcome: Result<Void, any Error> = .success(())
        var seen = false
        while let result = PQgetResult(conn) {
            seen = true
            do {
                _ = try consume(result)
            } catch {
                if case .success = outcome { outcome = .failure(error) }
            }
        }
        if !seen, case .success = outcome, PQstatus(conn) != CONNECTION_OK {
            outcome = .failure(
                PostgresError(
                    code: .unavailable,
                    message: "connection to PostgreSQL lost: " + PostgresConnection.firstLine(PQerrorMessage(conn))))
        }
        return outcome
    }

    /// Asks the server to cancel what this connection runs (over a separate connection, as libpq does).
    private func cancelRunningStatement() {
        guard let cancel = PQgetCancel(conn) else { return }
        defer { PQfreeCancel(cancel) }
        var message = [CChar](repeating: 0, count: 256)
        _ = PQcancel(cancel, &message, Int32(message.count))
    }
}

/// COPY's text format: fields separated by tabs, rows ended by `\n`, a backslash escaping itself and the
/// control characters (`\N` is NULL). Appends and reads fields of it.
public enum PostgresCopyText {
    /// Appends `text` as one field, escaped.
    public static func append(_ text: some StringProtocol, to buffer: inout [UInt8]) {
        var text = String(text)
        text.withUTF8 { bytes in
            // Most fields need no escape: copy them whole.
            if !bytes.contains(where: { $0 == 0x5C || $0 < 0x20 }) {
                buffer.append(contentsOf: bytes)
                return
            }
            for byte in bytes {
                switch byte {
                case 0x5C:
                    buffer.append(0x5C)
                    buffer.append(0x5C)
                case 0x0A:
                    buffer.append(0x5C)
                    buffer.append(UInt8(ascii: "n"))
                case 0x0D:
                    buffer.append(0x5C)
                    buffer.append(UInt8(ascii: "r"))
                case 0x09:
                    buffer.append(0x5C)
                    buffer.append(UInt8(ascii: "t"))
                case 0x08:
                    buffer.append(0x5C)
                    buffer.append(UInt8(ascii: "b"))
                case 0x0C:
                    buffer.append(0x5C)
                    buffer.append(UInt8(ascii: "f"))
                case 0x0B:
                    buffer.append(0x5C)
                    buffer.append(UInt8(ascii: "v"))
                default: buffer.append(byte)
                }
            }
        }
    }

    /// The fields of one row (its trailing `\n` optional), still escaped: slices of `line`.
    public static func fields(_ line: UnsafeRawBufferPointer) -> [UnsafeRawBufferPointer] {
        var end = line.count
        if end > 0 && line[end - 1] == 0x0A { end -= 1 }
        var fields: [UnsafeRawBufferPointer] = []
        var start = 0
        for i in 0..<end where line[i] == 0x09 {
            fields.append(UnsafeRawBufferPointer(rebasing: line[start..<i]))
            start = i + 1
        }
        fields.append(UnsafeRawBufferPointer(rebasing: line[start..<end]))
        return fields
    }

    /// A field's bytes unescaped (nil for `\N`).
    public static func unescaped(_ field: UnsafeRawBufferPointer) -> [UInt8]? {
        if field.count == 2 && field[0] == 0x5C && field[1] == UInt8(ascii: "N") { return nil }
        guard field.contains(0x5C) else { return Array(field) }
        var out: [UInt8] = []
        out.reserveCapacity(field.count)
        var i = 0
        while i < field.count {
            let byte = field[i]
            guard byte == 0x5C, i + 1 < field.count else {
                out.append(byte)
                i += 1
                continue
            }
            let next = field[i + 1]
            i += 2
            switch next {
            case UInt8(ascii: "n"): out.append(0x0A)
            case UInt8(ascii: "r"): out.append(0x0D)
            case UInt8(ascii: "t"): out.append(0x09)
            case UInt8(ascii: "b"): out.append(0x08)
            case UInt8(ascii: "f"): out.append(0x0C)
            case UInt8(ascii: "v"): out.append(0x0B)
            case UInt8(ascii: "0")...UInt8(ascii: "7"):
                // \ooo: up to three octal digits (COPY TO never writes it; COPY FROM accepts it).
                var value = Int(next - UInt8(ascii: "0"))
                var digits = 1
                while digits < 3, i < field.count, (UInt8(ascii: "0")...UInt8(ascii: "7")).contains(field[i]) {
                    value = value * 8 + Int(field[i] - UInt8(ascii: "0"))
                    i += 1
                    digits += 1
                }
                out.append(UInt8(truncatingIfNeeded: value))
            default: out.append(next)  // \\ and any other escaped character stand for themselves
            }
        }
        return out
    }
}
