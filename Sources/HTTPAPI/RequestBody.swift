import Foundation
import HTTPServer
import VisitDomain

/// The JSON bodies that are not visit events (keys, tokens, preferences), read with the one JSON reader
/// (`JSONObjectReader`, through the domain's `parseBody`) so that they are refused the way visit bodies
/// are; on top of it, strings here are identifiers and tokens, so control characters are refused too.
struct RequestBody {
    let reader: JSONObjectReader

    init(_ request: HTTPRequest) throws {
        do { reader = try VisitInputError.parseBody(request.body) } catch { throw Self.refusal(error) }
    }

    /// The API's answer to a refused body or field (the domain's code, message and status).
    private static func refusal(_ error: VisitInputError) -> APIError {
        APIError.input(error)
    }

    /// Runs a read, turning its refusal into the API's error for that field.
    private func read<T>(_ body: () throws(FieldProblem) -> T) throws -> T {
        do { return try body() } catch { throw Self.refusal(VisitInputError(error)) }
    }

    func allowOnly(_ keys: Set<String>) throws {
        try read { () throws(FieldProblem) in try reader.rejectUnknown(allowed: keys) }
    }

    func string(_ key: String, maxBytes: Int = 256) throws -> String? {
        guard reader.value(key) != nil else { return nil }
        return try requiredString(key, maxBytes: maxBytes)
    }

    func requiredString(_ key: String, maxBytes: Int = 256) throws -> String {
        let text = try read { () throws(FieldProblem) in try reader.string(key, maxBytes: maxBytes) }
        if text.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) {
            throw Self.refusal(VisitInputError(reader.invalid(key, "must not contain control characters")))
        }
        return text
    }

    /// An optional free-text string (`JSONObjectReader.optionalText`: no control or bidirectional control
    /// characters, not blank, `maxBytes` at most).
    func text(_ key: String, maxBytes: Int) throws -> String? {
        try read { () throws(FieldProblem) in try reader.optionalText(key, maxBytes: maxBytes) }
    }

    /// A required id (`IdGrammar`): one outside the grammar answers 422 `invalid_id` naming the field.
    func id(_ key: String) throws -> String {
        do { return try reader.id(key) } catch { throw Self.refusal(error) }
    }

    /// An optional id, checked like `id(_:)` when present.
    func optionalId(_ key: String) throws -> String? {
        do { return try reader.optionalId(key) } catch { throw Self.refusal(error) }
    }

    func bool(_ key: String) throws -> Bool {
        try read { () throws(FieldProblem) in try reader.bool(key) }
    }

    /// An optional whole number ≥ 0.
    func integer(_ key: String) throws -> Int? {
        guard let number = try read({ () throws(FieldProblem) in try reader.optionalInteger(key) }) else { return nil }
        guard number >= 0 else { throw Self.refusal(VisitInputError(reader.invalid(key, "expected a whole number ≥ 0"))) }
        return number
    }
}

/// Path and header checks shared by the routes.
enum RequestChecks {
    /// Ids in paths: an id (`IdGrammar`), or the thing it names is not found.
    static func id(_ value: String?, name: String) throws -> String {
        guard let value, IdGrammar.accepts(value) else { throw APIError(.notFound, "\(name) not found") }
        return value
    }

    /// `If-Match: "3"`, `3` or `W/"3"`.
    static func ifMatch(_ header: String?) throws -> Int? {
        guard var text = header?.trimmingCharacters(in: .whitespaces), !text.isEmpty else { return nil }
        if text.hasPrefix("W/") { text.removeFirst(2) }
        if text.hasPrefix("\""), text.hasSuffix("\""), text.count >= 2 { text = String(text.dropFirst().dropLast()) }
        guard let version = Int(text), version >= 0 else {
            throw APIError(.malformedRequest, "If-Match must be a version such as \"3\"")
        }
        return version
    }

    static func idempotencyKey(_ header: String?) throws -> String? {
        guard let key = header else { return nil }
        guard !key.isEmpty, key.utf8.count <= 255,
            key.unicodeScalars.allSatisfy({ $0.isASCII && $0.value >= 0x21 && $0.value < 0x7f })
        else {
            throw APIError(.malformedRequest, "Idempotency-Key must be 1 to 255 visible ASCII characters")
        }
        return key
    }
}
