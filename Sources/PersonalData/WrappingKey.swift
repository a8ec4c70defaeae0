import Foundation

/// The 32-byte key of `LIVEVISITS_PERSONAL_DATA_KEY_FILE` that wraps (AES-256-GCM) every customer's data
/// key. Its `id` — `wk-` and the first 8 bytes of its SHA-256, hex — is stored with each wrapped key, so a
/// row says which file opens it (and a rotation knows what is left to rewrap). The bytes never leave this type.
public struct WrappingKey: Sendable, Equatable {
    public let id: String
    let bytes: [UInt8]

    /// A problem with a key file, naming the variable (or option) it came from.
    public struct LoadError: Error, CustomStringConvertible, Sendable {
        public let message: String
        public var description: String { message }
    }

    init(bytes: [UInt8]) {
        precondition(bytes.count == AESGCM.keyBytes)
        self.bytes = bytes
        self.id = "wk-" + AESGCM.hex(AESGCM.sha256(bytes).prefix(8))
    }

    /// Reads a key file: exactly 32 bytes (raw, as `head -c 32 /dev/urandom` makes one).
    /// - Parameter origin: what names the file in an error (`LIVEVISITS_PERSONAL_DATA_KEY_FILE`, `--new-key-file`).
    public static func load(path: String, origin: String) throws(LoadError) -> WrappingKey {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw LoadError(message: "\(origin): cannot read \(path)")
        }
        guard data.count == AESGCM.keyBytes else {
            throw LoadError(
                message: "\(origin): \(path) holds \(data.count) bytes; a personal-data key file holds exactly 32 random bytes")
        }
        return WrappingKey(bytes: Array(data))
    }

    /// Writes a new random key file (mode 0600): the demo's, and a rotation's new key.
    public static func generate(path: String) throws -> WrappingKey {
        let bytes = try AESGCM.random(AESGCM.keyBytes)
        guard FileManager.default.createFile(atPath: path, contents: Data(bytes), attributes: [.posixPermissions: 0o600]) else {
            throw LoadError(message: "cannot write a key file at \(path)")
        }
        return WrappingKey(bytes: bytes)
    }
}
