import Postgres
import Runtime

/// The push tokens and device preferences the HTTP API registers, as functions on a connection (so they
/// join the caller's transaction). Tokens are stored to be sent, never logged or returned: use
/// `Logger.fingerprint` to name one. With `protection`, they are stored sealed under their customer's key
/// and found by a keyed hash (`PushTokenProtection`).
public struct TokenRegistry: Sendable {
    private let clock: any WallClock
    /// How tokens are kept at rest; nil: as given, found by their md5.
    public let protection: (any PushTokenProtection)?

    public init(clock: any WallClock = SystemClock(), protection: (any PushTokenProtection)? = nil) {
        self.clock = clock
        self.protection = protection
    }

    /// What a registration found.
    public enum Registration: String, Sendable, Hashable {
        /// A Live Activity (or device) not known before.
        case new
        /// Known, with another token (or retired before): the new token is used from now on.
        case rotated
        /// Known with this very token: its registration time is refreshed.
        case unchanged
    }

    /// Why a token stopped being used.
    public enum RetirementReason: String, Sendable, Hashable {
        /// The app said so (`DELETE`).
        case forgotten
        /// APNs 410 Unregistered / ExpiredToken.
        case unregistered
        /// APNs 400 BadDeviceToken (often a sandbox/production mix-up).
        case badDeviceToken
        /// APNs 400 DeviceTokenNotForTopic.
        case notForTopic
        /// Renewed at `activityRenewalSeconds` (contract §9): a new activity replaces it; only its end goes to it.
        case renewed
        /// A broadcast channel APNs no longer knows (`BadChannelId`, `ChannelNotRegistered`): forgotten.
        case channelGone
        /// The app reported the activity ended (`activityStateUpdates`).
        case ended
        /// The app reported the person swiped it away: kept, so no start of the visit goes to its device again.
        case dismissed
        /// A newer activity of the visit registered from the same device; only its end goes to it.
        case replaced
        /// Not renewed before its lifetime (iOS's 8 hours) ran out.
        case lapsed

        /// Retirements that are the activity's own fate, not its token's: a registration of the same activity
        /// does not bring it back (a forgotten or refused token comes back when registered again).
        static let final: [RetirementReason] = [.ended, .dismissed, .replaced, .renewed, .lapsed]
    }

    /// What a push token is registered for: the two kinds of token share one implementation.
    public enum Holder: Sendable, Hashable {
        /// One Live Activity of a visit (its update token), in `live_activities`.
        case liveActivity(visitId: String, activityId: String)
        /// A customer's device (its push-to-start token), in `push_to_start_tokens`.
        case pushToStart(customerId: String, deviceId: String)
        /// A customer's device (its ordinary notification token, contract §9), in `notification_tokens`.
        case notificationDevice(customerId: String, deviceId: String)
    }

    // MARK: registering and retiring, for either kind

    /// Registers or rotates the token of `holder`. With `deviceId` (Live Activities only: a push-to-start
    /// token's device is its holder), that device's preferences apply to it. A retired token's holder
    /// comes back to life. `customerId` names a Live Activity's customer (the others' holder names it),
    /// whose key `protection` seals the token under.
    ///
    /// The same token registered again keeps its stored (sealed) form, so that a retirement naming the
    /// form a worker claimed still finds it; a row written before tokens were sealed is sealed now.
    @discardableResult
    public func register(
        _ holder: Holder, pushToken: String, environment: PushEnvironment, deviceId: String? = nil,
        customerId: String? = nil, on connection: PostgresConnection
    ) throws -> Registration {
        let token = try TokenRegistry.normalized(pushToken)
        let protected = try (holder.customerId ?? customerId).flatMap { customer in
            try protection?.protect(token, customerId: customer, on: connection)
        }
        let stored = protected?.stored ?? token
        let hash = protected?.lookupHash
        let nowMs = Int64((clock.now() * 1000).rounded(.down))
        let table = holder.table
        let final = TokenRegistry.RetirementReason.final.map(\.rawValue)
        let query: PostgresQuery = """
            WITH previous AS (
                SELECT COALESCE(token_hash, md5(push_token)) AS hash, token_hash IS NULL AS legacy, retired_at_ms
                FROM \(identifier: table) WHERE \(holder.matches)
            )
            INSERT INTO \(identifier: table) (\(holder.insertColumns), push_token, token_hash, environment, registered_at_ms)
            VALUES (\(holder.insertValues(deviceId: deviceId, nowMs: nowMs)), \(stored), \(hash)::text, \(environment.rawValue), \(nowMs))
            ON CONFLICT (\(holder.keyColumns)) DO UPDATE
            SET push_token = CASE WHEN EXCLUDED.token_hash = \(identifier: table).token_hash
                                  THEN \(identifier: table).push_token ELSE EXCLUDED.push_token END,
                token_hash = EXCLUDED.token_hash, environment = EXCLUDED.environment,
                device_id = COALESCE(EXCLUDED.device_id, \(identifier: table).device_id),
                registered_at_ms = GREATEST(EXCLUDED.registered_at_ms, \(identifier: table).registered_at_ms + 1),
                retired_at_ms = CASE WHEN \(identifier: table).retired_reason = ANY (\(final)::text[])
                                     THEN \(identifier: table).retired_at_ms END,
                retired_reason = CASE WHEN \(identifier: table).retired_reason = ANY (\(final)::text[])
                                      THEN \(identifier: table).retired_reason END
            RETURNING (SELECT hash FROM previous) IS NOT NULL AS existed,
                      (SELECT hash = COALESCE(\(hash)::text, md5(\(token))) OR (legacy AND hash = md5(\(token)))
                       FROM previous) AS same_token,
                      (SELECT retired_at_ms FROM previous) IS NOT NULL AS was_retired
            """
        // Planned once per connection: its plan is one probe by the holder's key whatever the values, and left to
        // PostgreSQL's choice it was planned anew at nearly every call (5,911 plans for 6,400 registrations, the
        // planning twice the time of the statement itself).
        let rows = try connection.query(query.plannedOnce())
        guard let row = rows.first, try row.bool("existed") else { return .new }
        return try row.bool("same_token") && !(try row.bool("was_retired")) ? .unchanged : .rotated
    }

    /// Forgets the token of `holder` (retired as `forgotten`); its pending deliveries are cancelled.
    /// Returns false when it was not registered.
    @discardableResult
    public func forget(_ holder: Holder, on connection: PostgresConnection) throws -> Bool {
        try retire(holder, token: nil, reason: .forgotten, notRegisteredAfterMs: nil, on: connection)
    }

    /// Retires the token of `holder` after APNs refused it. With `token` (as stored: what the claim read),
    /// only while that token is still the registered one; with `notRegisteredAfterMs` (a 410's timestamp),
    /// only if the token was not registered again after it. Pending deliveries to it are cancelled. Returns whether it retired.
    @discardableResult
    public func retire(
        _ holder: Holder, token: String?, reason: RetirementReason, notRegisteredAfterMs: Int64?,
        on connection: PostgresConnection
    ) throws -> Bool {
        let nowMs = Int64((clock.now() * 1000).rounded(.down))
        let now = clock.now()
        let rows = try connection.query(
            """
            WITH retired AS (
                UPDATE \(identifier: holder.table) SET retired_at_ms = \(nowMs), retired_reason = \(reason.rawValue)
                WHERE \(holder.matches) AND retired_at_ms IS NULL
                  AND (\(token)::text IS NULL OR push_token = \(token))
                  AND (\(notRegisteredAfterMs)::bigint IS NULL OR registered_at_ms <= \(notRegisteredAfterMs))
                RETURNING \(holder.keyColumns)
            ),
            cancelled AS (
                UPDATE deliveries d SET state = 'cancelled', last_reason = 'token ' || \(reason.rawValue),
                       finished_at = \(now), lease_token = NULL
                FROM retired r
                WHERE \(holder.deliveriesOfRetired) AND d.state = 'pending'
                RETURNING d.id
            )
            SELECT (SELECT count(*) FROM retired) AS retired, (SELECT count(*) FROM cancelled) AS cancelled
            """)
        return try rows.first?.int("retired") ?? 0 > 0
    }

    // MARK: Live Activity update tokens

    /// Registers or rotates the update token of one Live Activity of a visit. With `deviceId`, that
    /// device's preferences apply to it. A retired activity comes back to life.
    @discardableResult
    public func registerLiveActivity(
        visitId: String, activityId: String, pushToken: String, environment: PushEnvironment, deviceId: String? = nil,
        customerId: String? = nil, on connection: PostgresConnection
    ) throws -> Registration {
        try register(
            .liveActivity(visitId: visitId, activityId: activityId), pushToken: pushToken, environment: environment,
            deviceId: deviceId, customerId: customerId, on: connection)
    }

    /// Forgets a Live Activity's token (see `forget`).
    @discardableResult
    public func forgetLiveActivity(visitId: String, activityId: String, on connection: PostgresConnection) throws -> Bool {
        try forget(.liveActivity(visitId: visitId, activityId: activityId), on: connection)
    }

    /// Live (not retired) Live Activities of a visit: the visit's `liveActivities`.
    public func liveActivityCount(visitId: String, on connection: PostgresConnection) throws -> Int {
        try TokenRegistry.liveActivityCount(connection.query(liveActivityCountQuery(visitId: visitId)))
    }

    /// The statement behind `liveActivityCount`, to run with others (`PostgresConnection.pipeline`).
    /// (`IdempotencyStore.storeVisitAnswerStatement` counts the same rows inside its own statement.)
    public func liveActivityCountQuery(visitId: String) -> PostgresQuery {
        "SELECT count(*) AS n FROM live_activities WHERE visit_id = \(visitId) AND retired_at_ms IS NULL"
    }

    /// Reads the rows of `liveActivityCountQuery`.
    public static func liveActivityCount(_ rows: PostgresRows) throws -> Int {
        try rows.first?.int("n") ?? 0
    }

    // MARK: push-to-start tokens

    /// Registers or rotates a customer's push-to-start token for one device.
    @discardableResult
    public func registerPushToStart(
        customerId: String, deviceId: String, pushToken: String, environment: PushEnvironment,
        on connection: PostgresConnection
    ) throws -> Registration {
        try register(
            .pushToStart(customerId: customerId, deviceId: deviceId), pushToken: pushToken, environment: environment,
            on: connection)
    }

    /// Forgets a push-to-start token; pending starts to that device are cancelled.
    @discardableResult
    public func forgetPushToStart(customerId: String, deviceId: String, on connection: PostgresConnection) throws -> Bool {
        try forget(.pushToStart(customerId: customerId, deviceId: deviceId), on: connection)
    }

    // MARK: preferences

    /// Stores what the app read from `ActivityAuthorizationInfo`. Switching Live Activities off cancels
    /// the device's pending deliveries at once (starts and updates alike) and stops new ones.
    public func setPreferences(
        customerId: String, deviceId: String, liveActivitiesEnabled: Bool, frequentPushesEnabled: Bool,
        on connection: PostgresConnection
    ) throws {
        let nowMs = Int64((clock.now() * 1000).rounded(.down))
        let now = clock.now()
        try connection.query(
            """
            INSERT INTO device_preferences (customer_id, device_id, live_activities_enabled, frequent_pushes_enabled, updated_at_ms)
            VALUES (\(customerId), \(deviceId), \(liveActivitiesEnabled), \(frequentPushesEnabled), \(nowMs))
            ON CONFLICT (customer_id, device_id) DO UPDATE
            SET live_activities_enabled = EXCLUDED.live_activities_enabled,
                frequent_pushes_enabled = EXCLUDED.frequent_pushes_enabled, updated_at_ms = EXCLUDED.updated_at_ms
            """)
        if !liveActivitiesEnabled {
            try connection.query(
                """
                UPDATE deliveries SET state = 'cancelled', last_reason = 'live activities switched off',
                       finished_at = \(now)
                WHERE customer_id = \(customerId) AND device_id = \(deviceId) AND state = 'pending' AND kind <> 'alert'
                """)
        }
    }

    /// The device's preferences (both enabled when never set).
    public func preferences(customerId: String, deviceId: String, on connection: PostgresConnection) throws
        -> (liveActivitiesEnabled: Bool, frequentPushesEnabled: Bool)
    {
        guard
            let row = try connection.query(
                """
                SELECT live_activities_enabled, frequent_pushes_enabled FROM device_preferences
                WHERE customer_id = \(customerId) AND device_id = \(deviceId)
                """
            ).first
        else { return (true, true) }
        return (try row.bool("live_activities_enabled"), try row.bool("frequent_pushes_enabled"))
    }

    // MARK: helpers

    /// Lowercase hex of an even length, 16…400 characters; anything else is `invalidToken` (the message
    /// never repeats the token).
    public static func normalized(_ token: String) throws -> String {
        let lower = token.lowercased()
        guard lower.utf8.count >= 16, lower.utf8.count <= 400, lower.utf8.count % 2 == 0,
            lower.utf8.allSatisfy({ (48...57).contains($0) || (97...102).contains($0) })
        else {
            throw LedgerError(code: .invalidToken, message: "pushToken must be hex (16 to 400 characters, even length)")
        }
        return lower
    }
}

/// Where each kind of token lives, as SQL fragments (`PostgresQuery` renumbers their binds).
extension TokenRegistry.Holder {
    /// The customer a device's token belongs to (a Live Activity's is found through its visit).
    var customerId: String? {
        switch self {
        case .liveActivity: nil
        case .pushToStart(let customerId, _), .notificationDevice(let customerId, _): customerId
        }
    }

    /// The table holding this kind of token.
    var table: String {
        switch self {
        case .liveActivity: "live_activities"
        case .pushToStart: "push_to_start_tokens"
        case .notificationDevice: "notification_tokens"
        }
    }

    /// The table's key, in order: the columns of `ON CONFLICT` and `RETURNING`.
    var keyColumns: PostgresQuery {
        switch self {
        case .liveActivity: "visit_id, activity_id"
        case .pushToStart, .notificationDevice: "customer_id, device_id"
        }
    }

    /// The columns a registration inserts besides the token: the key and the device.
    var insertColumns: PostgresQuery {
        switch self {
        case .liveActivity: "visit_id, activity_id, device_id, began_at_ms, origin, renewals"
        case .pushToStart, .notificationDevice: "customer_id, device_id"
        }
    }

    /// The values of `insertColumns`. A Live Activity's device is optional; a push-to-start token's is its key.
    ///
    /// A new Live Activity enters the ledger with how it came to be. From a device that a `start` of the visit
    /// reached since its last activity began, it is that start's activity: origin `pushToStart` (or `renewal`
    /// for a renewal's start), begun when APNs acknowledged the start (iOS counts its 8 hours from there).
    /// A start still on the wire counts too, begun now: the phone can register the activity a start made
    /// before the worker has recorded APNs' answer, and the origin must not depend on that race.
    /// Otherwise the app started it, now. It counts the renewals before it: one more than the newest renewed
    /// activity of its device (or of the visit, without a device), so the visit's cap holds along each chain.
    func insertValues(deviceId: String?, nowMs: Int64) -> PostgresQuery {
        switch self {
        case .liveActivity(let visitId, let activityId):
            let started: PostgresQuery = """
                (SELECT COALESCE(d.finished_at, \(Double(nowMs) / 1000)::float8) AS finished_at,
                        strpos(d.target, ' renewal ') > 0 AS renewal
                 FROM deliveries d
                 WHERE d.visit_id = \(visitId) AND d.kind = 'start' AND d.state IN ('sending', 'sent')
                   AND d.device_id = \(deviceId)::text
                   AND COALESCE(d.finished_at * 1000, \(nowMs)) > COALESCE((SELECT max(r.began_at_ms) FROM live_activities r
                                                        WHERE r.visit_id = \(visitId) AND r.device_id = \(deviceId)::text), 0)
                 ORDER BY d.id DESC LIMIT 1)
                """
            return """
                \(visitId), \(activityId), \(deviceId),
                COALESCE((SELECT (s.finished_at * 1000)::bigint FROM \(started) s), \(nowMs)),
                COALESCE((SELECT CASE WHEN s.renewal THEN 'renewal' ELSE 'pushToStart' END FROM \(started) s), 'app'),
                COALESCE((SELECT max(r.renewals) + 1 FROM live_activities r
                          WHERE r.visit_id = \(visitId) AND r.retired_reason = 'renewed'
                            AND (\(deviceId)::text IS NULL OR r.device_id = \(deviceId)::text OR r.device_id IS NULL)), 0)
                """
        case .pushToStart(let customerId, let deviceId), .notificationDevice(let customerId, let deviceId):
            return "\(customerId), \(deviceId)"
        }
    }

    /// The row of this holder.
    var matches: PostgresQuery {
        switch self {
        case .liveActivity(let visitId, let activityId): "visit_id = \(visitId) AND activity_id = \(activityId)"
        case .pushToStart(let customerId, let deviceId), .notificationDevice(let customerId, let deviceId):
            "customer_id = \(customerId) AND device_id = \(deviceId)"
        }
    }

    /// Deliveries `d` that went to a retired row `r` (its key columns): an activity's target, or the
    /// starts to a device.
    var deliveriesOfRetired: PostgresQuery {
        switch self {
        case .liveActivity: "d.target = 'activity' || json_build_array(r.visit_id, r.activity_id)::text"
        case .pushToStart: "d.kind = 'start' AND d.customer_id = r.customer_id AND d.device_id = r.device_id"
        case .notificationDevice: "d.kind = 'alert' AND d.customer_id = r.customer_id AND d.device_id = r.device_id"
        }
    }
}
