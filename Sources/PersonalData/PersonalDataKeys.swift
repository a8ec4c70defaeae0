import Postgres
import Runtime

/// The per-customer data keys (`personal_data_keys`): one random AES-256 key per customer, wrapped by the
/// key file (`LIVEVISITS_PERSONAL_DATA_KEY_FILE`) when one is given, stored as is otherwise. Erasure deletes
/// the row: every value sealed under it is then unreadable for good, wherever a copy sits.
///
/// A row keeps up to two wraps of its key — `data_key` under `wrapping_key_id`, and, while a rotation runs,
/// `previous_data_key` under `previous_wrapping_key_id` — and a process opens whichever its key files
/// match (`current`, then `previous`).
public struct PersonalDataKeys: Sendable {
    /// The key new data keys are wrapped with; nil: stored unwrapped.
    public let current: WrappingKey?
    /// Keys still accepted for opening (`LIVEVISITS_PERSONAL_DATA_PREVIOUS_KEY_FILE` during a rotation).
    public let previous: [WrappingKey]

    public init(current: WrappingKey?, previous: [WrappingKey] = []) {
        self.current = current
        self.previous = previous
    }

    /// A customer's data key, unwrapped: in memory for the call that needs it, and in a process's
    /// `PersonalDataKeyCache` while that hears erasures.
    public struct DataKey: Sendable {
        public let id: String
        let bytes: [UInt8]

        /// HMAC-SHA256 of `value` under this key, lowercase hex: how a sealed value (a push token) is found
        /// without opening it. Equal values of one customer give equal hashes; nobody without the key can
        /// test a guess, and the hash goes with the key.
        public func lookupHash(_ value: String) -> String {
            AESGCM.hex(AESGCM.hmacSHA256(Array(value.utf8), key: bytes))
        }
    }

    // MARK: sealing and opening one value

    /// The sealed text of `plain` under `key`; with `fallback`, the plain text read in its place once it
    /// cannot be opened (`SealedText.fallback`).
    public func seal(_ plain: String, with key: DataKey, fallback: String? = nil) throws -> String {
        let sealed = try AESGCM.seal(Array(plain.utf8), key: key.bytes, additionalData: SealedText.additionalData(keyId: key.id))
        return SealedText(keyId: key.id, sealed: sealed, fallback: fallback).text
    }

    /// The plain text of a sealed value under its key, or nil when it fails authentication.
    public static func open(_ sealed: SealedText, with key: DataKey) -> String? {
        guard key.id == sealed.keyId,
            let plain = AESGCM.open(sealed.sealed, key: key.bytes, additionalData: SealedText.additionalData(keyId: key.id))
        else { return nil }
        return String(validating: plain, as: UTF8.self)
    }

    // MARK: the table

    /// The customer's data key, made on first use. Runs on the caller's connection (inside the command's
    /// transaction when there is one). A concurrent first use by another transaction is waited for and read.
    public func dataKey(forCustomer customerId: String, on connection: PostgresConnection) throws -> DataKey {
        for _ in 0..<3 {
            if let key = try dataKey(made: connection.query(try dataKeyStatement(forCustomer: customerId))) { return key }
        }
        throw PersonalDataError(code: .unreadable, message: "could not make or read the data key of a customer")
    }

    /// The statement that reads the customer's data key, if any (`dataKey(made:)` reads its answer): for a
    /// caller that makes a missing key in its own write (`newDataKey(forCustomer:)`), so that nothing commits
    /// before that write does.
    public func dataKeyReadStatement(forCustomer customerId: String) -> PostgresQuery {
        """
        SELECT key_id, data_key, wrapping_key_id, previous_data_key, previous_wrapping_key_id
        FROM personal_data_keys WHERE customer_id = \(customerId)
        """
    }

    /// A fresh data key for the customer, and the statement that stores it: to run in the write that first
    /// seals under it. The statement fails (a unique violation, and with it that write) when the customer
    /// has a key by then, so that nothing is ever sealed under a key that is not the customer's. The key is
    /// wrapped under `current` and, during a rotation's switch, also under the previous file (processes that
    /// still hold only that one read new keys too).
    public func newDataKey(forCustomer customerId: String) throws -> (key: DataKey, store: PostgresQuery) {
        let fresh = try AESGCM.random(AESGCM.keyBytes)
        let keyId = "pk-" + AESGCM.hex(try AESGCM.random(8))
        let stored = try wrap(fresh, keyId: keyId, under: current)
        let alsoUnder = current == nil ? nil : previous.first
        let previousStored = try alsoUnder.map { try wrap(fresh, keyId: keyId, under: $0) }
        return (
            DataKey(id: keyId, bytes: fresh),
            """
            INSERT INTO personal_data_keys
                (key_id, customer_id, data_key, wrapping_key_id, previous_data_key, previous_wrapping_key_id)
            VALUES (\(keyId), \(customerId), \(stored), \(current?.id), \(previousStored), \(alsoUnder?.id))
            """
        )
    }

    /// The statement of `dataKey(forCustomer:on:)`, for a caller that sends it with others in one round trip:
    /// it makes the customer's key unless one exists, and reads whichever is theirs. `dataKey(made:)` reads
    /// its answer.
    public func dataKeyStatement(forCustomer customerId: String) throws -> PostgresQuery {
        let made = try newDataKey(forCustomer: customerId)
        return """
            WITH made AS (
                \(made.store)
                ON CONFLICT (customer_id) DO NOTHING
                RETURNING key_id, data_key, wrapping_key_id, previous_data_key, previous_wrapping_key_id
            )
            SELECT * FROM made
            UNION ALL
            \(dataKeyReadStatement(forCustomer: customerId))
            LIMIT 1
            """
    }

    /// The key a `dataKeyStatement` answered; nil when another transaction made it after the statement's
    /// snapshot (send the statement again).
    public func dataKey(made rows: PostgresRows) throws -> DataKey? {
        try rows.first.map(unwrap)
    }

    /// The data keys with these ids that still exist (erased ones are absent). A row that cannot be
    /// unwrapped is reported in `unreadable`.
    /// Keys read from `personal_data_keys`: the readable ones by id, and why the others could not be read.
    public typealias Read = (keys: [String: DataKey], unreadable: [String: PersonalDataError])

    public func dataKeys(ids: [String], on connection: PostgresConnection) throws -> Read {
        guard !ids.isEmpty else { return ([:], [:]) }
        let rows = try connection.query(
            """
            SELECT key_id, data_key, wrapping_key_id, previous_data_key, previous_wrapping_key_id
            FROM personal_data_keys WHERE key_id = ANY(\(ids)::text[])
            """)
        var keys: [String: DataKey] = [:]
        var unreadable: [String: PersonalDataError] = [:]
        for row in rows {
            let id = try row.string("key_id")
            do {
                keys[id] = try unwrap(row)
            } catch let error as PersonalDataError {
                unreadable[id] = error
            }
        }
        return (keys, unreadable)
    }

    /// The channel a destroyed key is announced on (payload: the key id; empty: forget every key), so that
    /// every process drops it from its `PersonalDataKeyCache` at once.
    public static let erasureChannel = "livevisits_personal_data_keys"

    /// Destroys a customer's data key and announces it on `erasureChannel` (delivered when the caller's
    /// transaction commits); the ids destroyed (none, or the one).
    public static func destroy(customerId: String, on connection: PostgresConnection) throws -> [String] {
        try connection.query(
            """
            WITH gone AS (DELETE FROM personal_data_keys WHERE customer_id = \(customerId) RETURNING key_id)
            SELECT key_id, pg_notify(\(erasureChannel), key_id) FROM gone
            """
        ).rows.map { try $0.string("key_id") }
    }

    // MARK: wrapping

    func wrap(_ key: [UInt8], keyId: String, under wrapping: WrappingKey?) throws -> String {
        guard let wrapping else { return Base64URL.encode(key) }
        return Base64URL.encode(try AESGCM.seal(key, key: wrapping.bytes, additionalData: PersonalDataKeys.wrapData(keyId)))
    }

    static func wrapData(_ keyId: String) -> [UInt8] { Array("livevisits-data-key:v1:\(keyId)".utf8) }

    func unwrap(_ row: PostgresRow) throws -> DataKey {
        let keyId = try row.string("key_id")
        let wraps = [
            (row["data_key"], row["wrapping_key_id"]), (row["previous_data_key"], row["previous_wrapping_key_id"]),
        ]
        var named: [String] = []
        for (text, wrappingId) in wraps {
            guard let text else { continue }
            guard let bytes = Base64URL.decode(text) else {
                throw PersonalDataError(code: .unreadable, message: "data key \(keyId) is not base64url")
            }
            guard let wrappingId else {
                guard bytes.count == AESGCM.keyBytes else {
                    throw PersonalDataError(code: .unreadable, message: "data key \(keyId) has the wrong size")
                }
                return DataKey(id: keyId, bytes: bytes)
            }
            named.append(wrappingId)
            guard let wrapping = ([current].compactMap { $0 } + previous).first(where: { $0.id == wrappingId }) else { continue }
            guard let key = AESGCM.open(bytes, key: wrapping.bytes, additionalData: PersonalDataKeys.wrapData(keyId)),
                key.count == AESGCM.keyBytes
            else {
                throw PersonalDataError(code: .unreadable, message: "data key \(keyId) fails authentication under \(wrappingId)")
            }
            return DataKey(id: keyId, bytes: key)
        }
        throw PersonalDataError(
            code: .wrappingKeyMissing,
            message:
                "data key \(keyId) is wrapped under \(named.joined(separator: ", ")), which LIVEVISITS_PERSONAL_DATA_KEY_FILE does not hold"
        )
    }
}
