import Postgres
import VisitDomain
import VisitProjections

extension VisitCommandHandler {
    /// A technician running late (`POST /v1/technicians/{id}/delay`), as a step of a transaction the caller
    /// opens: one `progress` moving the arrival window by `delay.minutes` on each of the technician's visits
    /// not reached yet (`TechnicianDelay.delayedStatuses`), all in that transaction (`executeTogether`). The
    /// visits are found in the read model and each is checked again on its state, so one that moved on or
    /// went to another technician meanwhile is left alone. Returns the visits written, in id order; none is
    /// an empty list.
    public func delay(technicianId: String, by delay: TechnicianDelay, context: VisitCommandContext)
        -> @Sendable (PostgresConnection) throws -> [VisitCommandResult]
    {
        { connection in
            let visitIds = try VisitReadModel.visitIds(
                technicianId: technicianId, statuses: TechnicianDelay.delayedStatuses.map(\.rawValue).sorted(),
                on: connection)
            return try executeTogether(visitIds: visitIds, context: context, on: connection) {
                delay.event(for: $0, technicianId: technicianId)
            }
        }
    }
}
