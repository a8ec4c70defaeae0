import EventStore
import VisitDomain

extension VisitCommandContext {
    /// A context whose actor is the caller's role and subject, with the request's correlation id.
    public init(
        actorRole: String, actorSubject: String, correlationId: String?, expectedVersion: Int? = nil,
        authorize: @escaping @Sendable (VisitState) throws -> Void = { _ in }
    ) {
        self.init(
            actor: EventMetadata(actorRole: actorRole, actorSubject: actorSubject, correlationId: correlationId),
            expectedVersion: expectedVersion, authorize: authorize)
    }
}
