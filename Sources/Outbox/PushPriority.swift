/// How urgently a push is delivered: `immediate` (10) for pushes with an alert and for `start`/`end`
/// (counts against the Live Activity budget), `low` (5) for routine updates (contract §5).
public enum PushPriority: Int, Sendable, Hashable {
    case low = 5
    case immediate = 10
}
