/// The `aps.event` of a Live Activity push, or `alert`: an ordinary notification (contract §9, no `aps.event`).
public enum PushKind: String, Sendable, Hashable {
    case start, update, end, alert
}
