import EventStore
import Outbox
import Postgres

extension Outbox {
    /// What a visit command writes, without its decision: one event (`eventType`, the van 1.2 km away) appended
    /// to the visit's stream without a version check and `intent` enqueued, pipelined in one transaction on
    /// `pool`; this outbox's workers are told once it has committed.
    func appendVisitEvent(
        visit: String, eventType: String, recordedAt: Double, intent: PushIntent, pool: PostgresPool
    ) async throws {
        let request = AppendRequest(
            streamName: "visit-\(visit)",
            events: [NewEvent(type: eventType, data: "{\"kilometresAway\":1.2}")], recordedAt: recordedAt)
        try EventStore.validate(request, limits: EventStoreLimits())
        let statements = [EventStore.appendStatement(request, guarded: false)] + (try enqueueStatements([intent]))
        _ = try await pool.withConnection { try $0.pipeline(statements) }
        committed()
    }
}
