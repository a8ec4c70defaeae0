import VisitDomain

extension VisitReplay {
    /// A visit's state as the replay folded it, with its booking order: the global position of its first event
    /// (0 when that event is not in the log), which the live upsert reads from the log itself.
    struct Folded: Sendable {
        let state: VisitState
        let booked: Int64
    }

    /// A read model a replay rebuilds: one table with a row per visit (primary key `visit_id`, a `version`
    /// column), filled from the visits' folded states. The fold is the same for every one; what differs is the
    /// table, the rows each state gives, and what is done to them after the bulk write.
    public struct Projection: Sendable {
        /// The name `livevisits replay` and `POST /v1/ops/projections/{name}/rebuild` take.
        public let name: String
        /// The live table the rebuild replaces.
        let table: String
        /// The columns of the COPY rows `appendCopyRows` writes.
        let copyColumns: String
        /// The columns a live row newer than the replay's snapshot carries over into the rebuilt table.
        let carriedColumns: [String]
        /// Appends each state's row as COPY text.
        let appendCopyRows: @Sendable (VisitReadModel, [Folded], inout [UInt8]) -> Void
        /// Statements run on the shadow table (named by the argument) after the bulk write, before its indexes.
        let afterCopy: @Sendable (String) -> [String]

        /// The visit read model (`visits`), behind `GET /v1/visits`.
        public static let visits = Projection(
            name: VisitReadModel.name, table: VisitReadModel.table, copyColumns: VisitReadModel.copyColumns,
            carriedColumns: [
                "customer_id", "technician_id", "status", "ended", "version", "scheduled_at", "state", "relevance_score",
                "stale_date", "dismissal_policy", "dismissal_date", "updated_at",
            ],
            appendCopyRows: { readModel, folded, buffer in
                readModel.appendCopyRows(folded.lazy.map { ($0.state, $0.booked) }, to: &buffer)
            },
            afterCopy: { _ in [] })

        /// The technicians read model (`technician_visits`), behind `GET /v1/technicians`: the rows' positions of
        /// their bookings or reassignments are read from the log after the bulk write.
        public static let technicians = Projection(
            name: TechnicianReadModel.name, table: TechnicianReadModel.table, copyColumns: TechnicianReadModel.copyColumns,
            carriedColumns: [
                "technician_id", "technician_name", "avatar_symbol", "van_description", "assigned_position", "status",
                "window_start", "window_end", "kilometres_away", "version",
            ],
            appendCopyRows: { _, folded, buffer in TechnicianReadModel.appendCopyRows(folded.lazy.map(\.state), to: &buffer) },
            afterCopy: { shadow in [TechnicianReadModel.assignedPositionsStatement(table: shadow)] })

        /// Every projection, in the order `livevisits replay` rebuilds them all.
        public static let all = [visits, technicians]

        /// The projection with this name, or nil.
        public static func named(_ name: String) -> Projection? { all.first { $0.name == name } }
    }
}
