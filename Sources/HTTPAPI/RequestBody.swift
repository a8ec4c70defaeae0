import Foundation
import HTTPServer
import VisitDomain

/// Small, strict readers for the JSON bodies that are not visit events (keys, tokens, preferences).
struct RequestBody {
    let object: [JSONMember]

    init(_ request: HTTPRequest) throws {
        let value: JSONValue
        do {
            value = try JSONValue.parse(Array(request.body))
        } catch {
            throw APIError(.input(.malformedJSON), "the body is not valid JSON")
        }
        guard case .object(let members) = value else {
            throw APIError(.input(.invalidBody), "the body must be a JSON object")
        }
        object = members
    }

    func allowOnly(_ keys: Set<String>) throws {
        for member in object where !keys.contains(member.key) {
            throw APIError(.input(.unknownField), "\(member.key.prefix(64)): not a field of this request")
        }
    }

    private func value(_ key: String) -> JSONValue? {
        object.first { $0.key == key }?.value
    }

    func string(_ key: String, maxBytes: Int = 256) throws -> String? {
        guard let value = value(key), value != .null else { return nil }
        guard case .string(let text) = value else { throw APIError(.input(.wrongType), "\(key): expected a string") }
        if text.isEmpty { throw APIError(.invalidValue, "\(key): must not be empty") }
        if text.utf8.count > maxBytes { throw APIError(.invalidValue, "\(key): longer than \(maxBytes) bytes") }
        if text.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) {
            throw APIError(.invalidValue, "\(key): must not contain control characters")
        }
        return text
    }

    func requiredString(_ key: String, maxBytes: Int = 256) throws -> String {
        guard let text = try string(key, maxBytes: maxBytes) else { throw APIError(.input(.missingField), "\(key): required") }
        return text
    }

    func bool(_ key: String) throws -> Bool {
        guard let value = value(key) else { throw APIError(.input(.missingField), "\(key): required") }
        guard case .bool(let flag) = value else { throw APIError(.input(.wrongType), "\(key): expected true or false") }
        return flag
    }

    func integer(_ key: String) throws -> Int? {
        guard let value = value(key), value != .null else { return nil }
        guard case .number(let number) = value else { throw APIError(.input(.wrongType), "\(key): expected a number") }
        guard number == number.rounded(), number >= 0, number < 1e15 else {
            throw APIError(.invalidValue, "\(key): expected a whole number ≥ 0")
        }
        return Int(number)
    }
}

/// Path and header checks shared by the routes.
enum RequestChecks {
    /// Ids in paths: 1–128 bytes of URL-unreserved characters.
    static func id(_ value: String?, name: String) throws -> String {
        guard let value, !value.isEmpty, value.utf8.count <= 128,
            value.utf8.allSatisfy({ c in
                (c >= 48 && c <= 57) || (c >= 65 && c <= 90) || (c >= 97 && c <= 122) || c == 45 || c == 46 || c == 95 || c == 126
            })
        else { throw APIError(.notFound, "\(name) not found") }
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
