import EventStore
import Postgres
import VisitDomain

extension VisitCommandHandler {
    /// Commands on several visits (distinct ids) written as one, all or none: one statement reads the visits' states, `event`
    /// gives each visit's event from its state (nil: the visit is left alone), each is checked and decided as
    /// `execute(_:on:)` decides one, and one pipeline writes them all — their events in one statement, their
    /// read-model rows in one, their outbox rows. Returns the results of the visits written, in the order of
    /// `visitIds` (empty when `event` chose none).
    ///
    /// Unlike a group-commit batch, whose commands each keep their own outcome, a refusal of any one fails the
    /// whole and nothing is written; so does a writer that took one of the visits' next positions meanwhile —
    /// thrown as `wrongExpectedVersion` for the caller to run its transaction again on the new states
    /// (`LostRace`): neither write is lost. The events go in by stream name (`appendStatement(forEach:)`), the
    /// order every batch takes too, so two such writes wait for each other rather than deadlock.
    ///
    /// Meant as a step of the caller's transaction (which may store an idempotent answer with it): the visits'
    /// remembered states are forgotten, as this handler does not see that transaction commit; by itself, the
    /// pipeline is its own transaction and the new states are remembered. The caller calls `eventsCommitted`
    /// and `pushes.committed()` after the commit.
    public func executeTogether(
        visitIds: [String], context: VisitCommandContext, on connection: PostgresConnection,
        event: (VisitState) throws -> VisitEvent?
    ) throws -> [VisitCommandResult] {
        guard !visitIds.isEmpty else { return [] }
        if connection.inTransaction { states.forget(visitIds, distrusting: false) }
        let read = try currentStates(of: visitIds, refusals: visitIds.map { _ in nil }, on: connection)
        var prepared: [Prepared] = []
        for (visitId, state) in zip(visitIds, read.states) {
            guard let state = try state.get(), let chosen = try event(state) else { continue }
            let command = VisitCommand(visitId: visitId, event: chosen, context: context, isCreation: false)
            prepared.append(try prepare(command, state: state, on: connection))
        }
        guard !prepared.isEmpty else { return [] }
        let requests = prepared.map(\.request)
        let encoded = readModel.encode(prepared.map(\.accepted.state))
        let statements =
            [EventStore.appendStatement(forEach: requests)] + readModel.upsertStatements(encoded)
            + (try pushes.statements(for: prepared.flatMap(\.pushIntents)))
        let results: [PostgresRows]
        do {
            results = try connection.pipeline(statements)
        } catch let error as PostgresError {
            // (The conflict names the first visit: which one lost its race the caller learns by reading again.)
            throw try EventStore.appendFailure(error, requests[0], on: connection)
        }
        if !connection.inTransaction { states.remember(prepared.map(\.accepted.state)) }
        let appended = try EventStore.appendResults(requests, results[0])
        return prepared.indices.map { n in
            VisitCommandResult(
                state: prepared[n].accepted.state, appended: appended[n], pushes: prepared[n].accepted.pushes.count,
                view: encoded.views[n], alsoRows: [], followers: nil)
        }
    }
}
