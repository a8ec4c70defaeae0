import COpenSSL
import Foundation
import JSON
import Postgres
import VisitDomain

/// The roles of contract §4.
public enum Role: String, Sendable, CaseIterable {
    case dispatcher, technician, customer, ops
}

/// The authenticated caller of a request.
public struct Caller: Sendable, Equatable {
    public let keyId: String
    public let role: Role
    /// The technician or customer id the key speaks for (nil for dispatcher and ops keys).
    public let subject: String?
    /// The display name of the person behind the key (`actor.name` of the events they append), if it has one.
    public let name: String?

    public init(keyId: String, role: Role, subject: String?, name: String? = nil) {
        self.keyId = keyId
        self.role = role
        self.subject = subject
        self.name = name
    }
}

/// A freshly minted key: `key` is shown once and never stored.
public struct MintedKey: Sendable {
    public let keyId: String
    public let key: String
    public let role: Role
    public let subject: String?
    public let name: String?
}

/// API keys: `lv_<keyId>_<secret>`; only SHA-256(secret) is stored (`KeyStore`), compared in constant time.
public enum APIKeys {
    public struct KeyError: Error, CustomStringConvertible, Sendable {
        public let message: String
        public var description: String { message }
    }

    /// Refuses (`KeyError`) a key `mint` would refuse, before any database work: a technician or customer key
    /// without a subject, or a subject that is not an id. A subject is the customer or technician id the key
    /// acts for, so it follows the one id grammar (contract §15): a customer key's subject is always an id
    /// the device and erasure paths can name.
    public static func check(role: Role, subject: String?, name: String? = nil) throws {
        if (role == .technician || role == .customer) && (subject ?? "").isEmpty {
            throw KeyError(message: "a \(role.rawValue) key needs a subject (the \(role.rawValue) id)")
        }
        if let subject, !IdGrammar.accepts(subject) {
            throw KeyError(message: "subject: \(IdGrammar.requirement)")
        }
        if let name { try checkName(name) }
    }

    /// The most UTF-8 bytes a key's display name may have (a person's name, as a visit's history shows it).
    public static let nameBytes = 128

    /// Refuses (`KeyError`) a display name that is blank, longer than `nameBytes`, or holds a control or
    /// bidirectional control character (free text shown to people, as the API's other free text).
    public static func checkName(_ name: String) throws {
        if name.unicodeScalars.allSatisfy(\.properties.isWhitespace) { throw KeyError(message: "name: must not be empty") }
        if name.utf8.count > nameBytes { throw KeyError(message: "name: longer than \(nameBytes) bytes") }
        if let refused = JSONObjectReader.refusedCharacter(in: name) {
            throw KeyError(message: "name: must not contain \(refused)")
        }
    }

    /// Creates a key. Technician and customer keys need a subject; dispatcher and ops keys may have one. A
    /// subject is an id (`IdGrammar`); a name is a person's display name (`checkName`), kept with the key.
    public static func mint(
        role: Role, subject: String?, name: String? = nil, createdBy: String?, on connection: PostgresConnection
    ) throws -> MintedKey {
        try check(role: role, subject: subject, name: name)
        let keyId = randomHex(bytes: 8)
        let secret = randomHex(bytes: 24)
        try KeyStore.insert(
            keyId: keyId, secretHash: sha256Hex(secret), role: role.rawValue, subject: subject, name: name,
            createdBy: createdBy, on: connection)
        return MintedKey(keyId: keyId, key: "lv_\(keyId)_\(secret)", role: role, subject: subject, name: name)
    }

    /// The caller a presented key belongs to, or nil (unknown, malformed, revoked or wrong secret).
    public static func authenticate(_ presented: String, on connection: PostgresConnection) throws -> Caller? {
        guard let (keyId, secret) = parse(presented), let stored = try lookup(keyId: keyId, on: connection) else { return nil }
        return stored.caller(presenting: secret)
    }

    /// The id and secret of a well-formed key (`lv_<16 hex>_<48 hex>`), or nil.
    public static func parse(_ presented: String) -> (keyId: String, secret: String)? {
        let bytes = Array(presented.utf8)
        // "lv_" + 16 hex + "_" + 48 hex
        guard bytes.count == 68, bytes[0] == UInt8(ascii: "l"), bytes[1] == UInt8(ascii: "v"), bytes[2] == UInt8(ascii: "_"),
            bytes[19] == UInt8(ascii: "_")
        else { return nil }
        let isHex: (UInt8) -> Bool = {
            ($0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9")) || ($0 >= UInt8(ascii: "a") && $0 <= UInt8(ascii: "f"))
                || ($0 >= UInt8(ascii: "A") && $0 <= UInt8(ascii: "F"))
        }
        guard bytes[3..<19].allSatisfy(isHex), bytes[20...].allSatisfy(isHex) else { return nil }
        return (String(decoding: bytes[3..<19], as: UTF8.self), String(decoding: bytes[20...], as: UTF8.self))
    }

    /// What is stored for a live key: the hash of its secret, its role, subject and display name (a key's
    /// name never changes, so a cached row is never stale in it).
    public struct StoredKey: Sendable {
        public let keyId: String
        let secretHash: [UInt8]
        public let role: Role
        public let subject: String?
        public let name: String?

        /// The caller when `secret` hashes to the stored hash (compared in constant time), else nil.
        public func caller(presenting secret: String) -> Caller? {
            guard APIKeys.constantTimeEqual(secretHash, Array(APIKeys.sha256Hex(secret).utf8)) else { return nil }
            return Caller(keyId: keyId, role: role, subject: subject, name: name)
        }
    }

    /// The live (not revoked) key with this id, or nil.
    public static func lookup(keyId: String, on connection: PostgresConnection) throws -> StoredKey? {
        guard let row = try KeyStore.live(keyId: keyId, on: connection), let role = Role(rawValue: row.role) else { return nil }
        return StoredKey(
            keyId: keyId, secretHash: Array(row.secretHash.utf8), role: role, subject: row.subject, name: row.name)
    }

    /// The channel a revocation is announced on (payload: the key id), so that every process drops the
    /// key from its `APIKeyCache` at once.
    public static let revocationChannel = KeyStore.revocationChannel

    /// Revokes a key at once; false when no live key has that id. `allowedRoles` limits whose keys may go.
    public static func revoke(keyId: String, allowedRoles: [Role], on connection: PostgresConnection) throws -> Bool {
        try KeyStore.revoke(keyId: keyId, roles: allowedRoles.map(\.rawValue), on: connection)
    }

    static func sha256Hex(_ text: String) -> String { sha256Hex(Array(text.utf8)) }

    /// Lower-case hex SHA-256 of `bytes` (keys' secrets, idempotent requests' bodies).
    public static func sha256Hex(_ bytes: [UInt8]) -> String {
        var digest = [UInt8](repeating: 0, count: Int(SHA256_DIGEST_LENGTH))
        bytes.withUnsafeBufferPointer { input in
            _ = SHA256(input.baseAddress, input.count, &digest)
        }
        return hex(digest)
    }

    /// Lower-case hex of bytes (a hashed key is computed per request: no `String(format:)` per byte).
    static func hex(_ bytes: [UInt8]) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var out = [UInt8]()
        out.reserveCapacity(bytes.count * 2)
        for byte in bytes {
            out.append(digits[Int(byte >> 4)])
            out.append(digits[Int(byte & 0x0f)])
        }
        return String(decoding: out, as: UTF8.self)
    }

    static func randomHex(bytes count: Int) -> String {
        var bytes = [UInt8](repeating: 0, count: count)
        if RAND_bytes(&bytes, Int32(count)) != 1 {
            for i in bytes.indices { bytes[i] = UInt8.random(in: 0...255) }
        }
        return hex(bytes)
    }

    static func constantTimeEqual(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        guard a.count == b.count else { return false }
        var difference: UInt8 = 0
        for i in a.indices { difference |= a[i] ^ b[i] }
        return difference == 0
    }
}
