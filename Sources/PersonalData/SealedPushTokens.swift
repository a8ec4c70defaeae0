import LiveActivityLedger
import Postgres

/// Push tokens sealed under the customer's data key like the other personal fields (`SealedText`), found by
/// HMAC-SHA256 of the token under that key (hex): a dump shows neither the token nor a hash anyone without
/// the key could test a guess against, and erasing the customer leaves nothing to open.
public struct SealedPushTokens: PushTokenProtection {
    public let keys: PersonalDataKeys

    public init(keys: PersonalDataKeys) {
        self.keys = keys
    }

    public func protect(_ token: String, customerId: String, on connection: PostgresConnection) throws -> ProtectedPushToken {
        let key = try keys.dataKey(forCustomer: customerId, on: connection)
        return ProtectedPushToken(stored: try keys.seal(token, with: key), lookupHash: key.lookupHash(token))
    }
}
