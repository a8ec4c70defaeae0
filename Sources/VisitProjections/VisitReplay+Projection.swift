import VisitDomain

extension VisitReplay {
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
        let appendCopyRows: @Sendable (VisitReadModel, [VisitState], inout [UInt8]) -> Void
        /// Statements run on the shadow table (named by the argument) after the bulk write, before its indexes.
        let afterCopy: @Sendable (String) -> [String]

        /// The visit read model (`visits`), behind `GET /v1/visits`: the rows' booking order (`booked`) is read
        /// from the log after the bulk write.
        public static let visits = Projection(
            name: VisitReadModel.name, table: VisitReadModel.table, copyColumns: VisitReadModel.copyColumns,
            carriedColumns: [
                "customer_id", "technician_id", "status", "ended", "version", "scheduled_at", "state", "relevance_score",
                "stale_date", "dismissal_policy", "dismissal_date", "updated_at",
            ],
            appendCopyRows: { readModel, states, buffer in readModel.appendCopyRows(states, to: &buffer) },
            afterCopy: { shadow in [VisitReadModel.bookedStatement(table: shadow)] })

        /// The technicians read model (`technician_visits`), behind `GET /v1/technicians`: the rows' positions of
        /// their bookings or reassignments are read from the log after the bulk write.
        public static let technicians = Projection(
            name: TechnicianReadModel.name, table: TechnicianReadModel.table, copyColumns: TechnicianReadModel.copyColumns,
            carriedColumns: [
                "technician_id", "technician_name", "avatar_symbol", "van_description", "assigned_position", "status",
                "window_start", "window_end", "kilometres_away", "version",
            ],
            appendCopyRows: { _, states, buffer in TechnicianReadModel.appendCopyRows(states, to: &buffer) },
            afterCopy: { shadow in [TechnicianReadModel.assignedPositionsStatement(table: shadow)] })

        /// Every projection, in the order `livevisits replay` rebuilds them all.
        public static let all = [visits, technicians]

        /// The projection with this name, or nil.
        public static func named(_ name: String) -> Projection? { all.first { $0.name == name } }
    }
}
