import EventStore
import VisitDomain

extension VisitCommandContext {
    /// A context whose actor is the caller's role, subject and display name (when their key has one), with the
    /// request's correlation id.
    public init(
        actorRole: String, actorSubject: String, actorName: String? = nil, correlationId: String?, expectedVersion: Int? = nil,
        authorize: @escaping @Sendable (VisitState) throws -> Void = { _ in }
    ) {
        self.init(
            actor: EventMetadata(
                actorRole: actorRole, actorSubject: actorSubject, actorName: actorName, correlationId: correlationId),
            expectedVersion: expectedVersion, authorize: authorize)
    }
}
