import Postgres

/// The caps of contract §15: one customer's key cannot make every later event of a visit fan out to hundreds
/// of activities, nor fill the tables with devices.
///
/// Each check runs inside the registration's transaction, before the registration, and first takes a
/// transaction-level advisory lock on the visit (or customer): two registrations at the cap's last place
/// are serialized, and the second counts what the first registered once the first has committed. The lock
/// is its own statement, so that the count's snapshot (READ COMMITTED: one per statement) is taken after it.
extension TokenRegistry {
    /// The most live (not retired) Live Activities a visit holds.
    public static let maximumLiveActivitiesPerVisit = 20
    /// The most devices a customer has; a device counts while it has a live push-to-start or notification token.
    public static let maximumDevicesPerCustomer = 50

    /// Refuses (`LedgerError.Code.tooManyActivities`) registering `activityId` when that would make the visit
    /// hold more than `maximumLiveActivitiesPerVisit` live activities. An activity already registered is not
    /// a new one (live, or retired for good, which a registration does not bring back); with `deviceId`, the
    /// visit's other live activities on that device do not count (the registration replaces them).
    public func admitLiveActivity(
        visitId: String, activityId: String, deviceId: String?, on connection: PostgresConnection
    ) throws {
        _ = try connection.query("SELECT pg_advisory_xact_lock(hashtext('livevisits_live_activities'), hashtext(\(visitId)))")
        let final = TokenRegistry.RetirementReason.final.map(\.rawValue)
        let row = try connection.query(
            """
            SELECT EXISTS (SELECT 1 FROM live_activities
                           WHERE visit_id = \(visitId) AND activity_id = \(activityId)
                             AND (retired_at_ms IS NULL OR retired_reason = ANY (\(final)::text[]))) AS known,
                   (SELECT count(*) FROM live_activities
                    WHERE visit_id = \(visitId) AND retired_at_ms IS NULL
                      AND (\(deviceId)::text IS NULL OR device_id IS DISTINCT FROM \(deviceId)::text)) AS live
            """
        ).first
        let known = try row?.bool("known") ?? false
        guard !known, try row?.int("live") ?? 0 >= TokenRegistry.maximumLiveActivitiesPerVisit else { return }
        throw LedgerError(
            code: .tooManyActivities,
            message:
                "the visit has \(TokenRegistry.maximumLiveActivitiesPerVisit) live activities already; forget one first")
    }

    /// Refuses (`LedgerError.Code.tooManyDevices`) a push-to-start or notification token for `deviceId` when
    /// that would give the customer more than `maximumDevicesPerCustomer` devices. A device that has a live
    /// token of either kind is not a new one.
    public func admitDevice(customerId: String, deviceId: String, on connection: PostgresConnection) throws {
        _ = try connection.query("SELECT pg_advisory_xact_lock(hashtext('livevisits_devices'), hashtext(\(customerId)))")
        let row = try connection.query(
            """
            WITH devices AS (
                SELECT device_id FROM push_to_start_tokens WHERE customer_id = \(customerId) AND retired_at_ms IS NULL
                UNION
                SELECT device_id FROM notification_tokens WHERE customer_id = \(customerId) AND retired_at_ms IS NULL
            )
            SELECT EXISTS (SELECT 1 FROM devices WHERE device_id = \(deviceId)) AS known,
                   (SELECT count(*) FROM devices) AS live
            """
        ).first
        let known = try row?.bool("known") ?? false
        guard !known, try row?.int("live") ?? 0 >= TokenRegistry.maximumDevicesPerCustomer else { return }
        throw LedgerError(
            code: .tooManyDevices,
            message: "the customer has \(TokenRegistry.maximumDevicesPerCustomer) devices already; forget one first")
    }
}
