/// The `aps.event` of a Live Activity push.
public enum PushKind: String, Sendable, Hashable {
    case start, update, end
}
