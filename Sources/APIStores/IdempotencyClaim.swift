import Foundation
import JSON

/// An `Idempotency-Key` about to be used: its scope (the calling key and the route) and the request body it
/// is kept with (contract §6, "Idempotency").
public struct IdempotencyClaim: Sendable {
    public let scope: IdempotencyScope
    /// The body's digest as stored (`storedBody`).
    public let body: String
    /// The digest of the raw bytes, which rows stored before migration 0014 hold.
    public var rawDigest: String? = nil

    public init(scope: IdempotencyScope, body: String, rawDigest: String? = nil) {
        self.scope = scope
        self.body = body
        self.rawDigest = rawDigest
    }

    /// A claim for a request's body: its canonical digest, and the digest of its bytes as sent.
    public init(scope: IdempotencyScope, requestBody: Data) {
        self.init(
            scope: scope, body: IdempotencyClaim.storedBody(requestBody), rawDigest: IdempotencyClaim.rawDigest(requestBody))
    }

    /// The key is taken (a retry, or a concurrent first request that committed first): what it holds.
    public struct Taken: Error {
        public let record: IdempotencyRecord?
    }

    /// Whether `record` was kept for this claim's body (equal JSON, or the same bytes for rows stored
    /// before migration 0014).
    public func matches(_ record: IdempotencyRecord) -> Bool {
        record.requestBody == body || record.requestBody == rawDigest
    }

    /// The request body as kept under an idempotency key: `sha256:` and the hex SHA-256 of its JSON written
    /// canonically (members sorted by key, one writer), so a retry of equal JSON matches whatever its spacing
    /// or member order, and the table never holds the body itself (a `POST /v1/visits` body carries the
    /// customer's name and address). A body that is not JSON is digested as its bytes.
    public static func storedBody(_ bytes: Data) -> String {
        guard let json = try? JSONValue.parse(Array(bytes), maximumMembers: JSONValue.requestMemberLimit) else {
            return digest(Array(bytes))
        }
        return digest(canonical(json).serialized())
    }

    /// The digest of the body's bytes as sent (how migration 0014 digested the bodies stored before it).
    public static func rawDigest(_ bytes: Data) -> String { digest(Array(bytes)) }

    static func digest(_ bytes: [UInt8]) -> String {
        "sha256:" + APIKeys.sha256Hex(bytes)
    }

    static func canonical(_ value: JSONValue) -> JSONValue {
        switch value {
        case .object(let members):
            return .object(members.sorted { $0.key < $1.key }.map { JSONMember($0.key, canonical($0.value)) })
        case .array(let items): return .array(items.map(canonical))
        default: return value
        }
    }
}
