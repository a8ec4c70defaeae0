/// The `apns-priority` header: `10` delivers at once (alerts, `start`, `end`; counts against the
/// Live Activity budget), `5` is for routine updates.
public enum APNsPriority: Int, Sendable, Hashable {
    case low = 5
    case immediate = 10
}
