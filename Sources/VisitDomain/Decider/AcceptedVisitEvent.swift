/// An event the state machine accepted, with everything one append transaction writes:
/// the recorded event, the state (read model) after it, and the pushes it implies (outbox).
public struct AcceptedVisitEvent: Sendable, Hashable {
    /// The event with its version and recorded time.
    public var recorded: RecordedVisitEvent
    /// The visit after the event.
    public var state: VisitState
    /// The pushes the event implies (tokens are resolved by the outbox at send time).
    public var pushes: [PushPlan]
}
