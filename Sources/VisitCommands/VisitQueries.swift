import EventStore
import Foundation
import JSON
import LiveActivityLedger
import Outbox
import Postgres
import VisitDomain
import VisitProjections

/// The API's reads of visits: a visit with who follows it, a page of visits, a visit's history. Each takes
/// one connection of the pool for its statements. Here rather than in `VisitProjections`: a visit's answer
/// joins the read model with the outbox's followers (live activities, channels).
public struct VisitQueries: Sendable {
    public let pool: PostgresPool
    public let ledger: LiveActivityLedger
    public let rules: ProjectionRules
    /// The technicians' days asked for, kept in memory and followed from the log.
    public let days: TechnicianDays
    /// What pages of visits drew from the rows they read lately (the consoles read the same ones again).
    public let rowCache = VisitRowCache()

    public init(pool: PostgresPool, ledger: LiveActivityLedger = LiveActivityLedger(), rules: ProjectionRules = .contractDefault)
    {
        self.pool = pool
        self.ledger = ledger
        self.rules = rules
        days = TechnicianDays(pool: pool)
    }

    /// A visit's Live Activity ledger (newest first); nil when the visit does not exist or `visible` says no.
    public func liveActivities(_ visitId: String, visible: @escaping @Sendable (VisitReadModel.Row) -> Bool) async throws
        -> [LiveActivityEntry]?
    {
        let (ledger, rules) = (self.ledger, self.rules)
        return try await pool.withConnection { c in
            guard let row = try VisitReadModel.row(visitId: visitId, on: c), visible(row),
                let state = try VisitReadModel.state(visitId: visitId, on: c)
            else { return nil }
            let facts = LiveActivityLedger.VisitFacts(
                visitId: visitId, customerId: row.customerId, ended: row.ended, staleDate: state.staleDate(rules).map(Int64.init))
            return try ledger.entries(of: facts, on: c)
        }
    }

    /// `GET /v1/technicians`'s answer for the day `[from, to)` (epoch seconds): the technicians with a visit
    /// whose current window starts in it, each with those visits, as `TechnicianReadModel.day` reads them,
    /// from the day kept in memory (`TechnicianDays`) brought up to date first.
    public func technicianDay(from: Int64, to: Int64) async throws -> Data {
        try await days.day(from: from, to: to)
    }

    /// A visit's row, or nil when it does not exist.
    public func row(_ visitId: String) async throws -> VisitReadModel.Row? {
        try await pool.withConnection { c in try VisitReadModel.row(visitId: visitId, on: c) }
    }

    /// A visit's row and who follows it; nil when it does not exist or `visible` says no.
    public func visit(_ visitId: String, visible: @escaping @Sendable (VisitReadModel.Row) -> Bool) async throws
        -> (row: VisitReadModel.Row, followers: VisitFollowers)?
    {
        try await pool.withConnection { c in
            guard let row = try VisitReadModel.row(visitId: visitId, on: c), visible(row) else { return nil }
            return (row, try VisitFollowers.of([visitId], on: c)[0])
        }
    }

    /// The rows of `filter` (up to one more than its limit: the extra row says another page follows), and who
    /// follows each of the first `limit` of them, read in one statement. With `visible` false (the filter
    /// asks for what the caller may not see) the page is empty.
    public func page(_ filter: VisitReadModel.ListFilter, visible: Bool = true) async throws
        -> (rows: [VisitReadModel.Row], followers: [VisitFollowers])
    {
        let rowCache = self.rowCache
        return try await pool.withConnection { c in
            let rows = visible ? try VisitReadModel.list(filter, on: c, cache: rowCache) : []
            return (rows, try VisitFollowers.of(rows.prefix(filter.limit).map(\.visitId), on: c))
        }
    }

    /// A visit's events as the API shows them (`{"events":[…]}`: position, version, type, data, recorded time
    /// and actor — role, subject, and `name` when the key that appended it has one); nil when the visit does
    /// not exist or `visible` says no. Without `showingLocation`, the `scheduled` event's `location` (the
    /// customer's, for dispatchers and ops only) is left out.
    public func history(
        _ visitId: String, showingLocation: Bool = false, visible: @escaping @Sendable (VisitReadModel.Row) -> Bool
    ) async throws -> JSONValue? {
        try await pool.withConnection { c -> JSONValue? in
            guard let row = try VisitReadModel.row(visitId: visitId, on: c), visible(row) else { return nil }
            let events = try EventStore.readStream(VisitCommandHandler.streamName(for: visitId), on: c)
            let items: [JSONValue] = events.map { $0.historyEntry(showingLocation: showingLocation) }
            return .object([JSONMember("events", .array(items))])
        }
    }
}
