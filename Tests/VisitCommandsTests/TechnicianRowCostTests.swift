import Foundation
import Postgres
import TestSupport
import Testing
import VisitCommands
import VisitTestSupport

@testable import VisitProjections

/// A visit's `technician_visits` row is written with every command; the position of the booking or
/// reassignment that names the technician is read from the events the command adds, not from the visit's
/// whole history: a visit followed all day (a progress every fix that moves it) costs the same at its
/// hundredth event as at its second.
@Suite(.timeLimit(.minutes(2))) struct TechnicianRowCostTests {
    /// Events read (rows and index entries of `events`) by one command on `c`.
    func eventsRead(by command: VisitCommand, _ f: VisitFixtures, on c: PostgresConnection) throws -> Int64 {
        func read() throws -> Int64 { try rowsAndEntriesRead(from: ["events"], on: c) }
        let before = try read()
        _ = try f.handler.executeBatch([command], on: c)[0].get()
        return try read() - before
    }

    /// The row's assigned position, and the one a replay computes from the log for its version.
    func positions(_ visit: String, on c: PostgresConnection) throws -> (row: Int64, fromTheLog: Int64) {
        let row = try c.query("SELECT assigned_position AS p FROM technician_visits WHERE visit_id = \(visit)").rows[0]
        let log = try c.query(
            """
            SELECT max(e.global_position) AS p FROM events e JOIN technician_visits t ON t.visit_id = \(visit)
            WHERE e.stream_name = 'visit-' || t.visit_id AND e.position <= t.version
              AND e.type IN ('scheduled', 'reassigned')
            """
        ).rows[0]
        return (try row.int64("p"), try log.int64("p"))
    }

    @Test func aCommandReadsTheEventsItAddsNotTheVisitsHistory() async throws {
        try await VisitFixtures.with { f in
            _ = try await f.schedule("v-long")
            for n in 0..<300 {
                try await f.post("v-long", #"{"type": "progress", "kilometresAway": \#(40.0 - Double(n) * 0.1)}"#)
            }
            try await f.pool.withConnection { c in
                let progress = try VisitFixtures.command("v-long", #"{"type": "progress", "kilometresAway": 9.5}"#)
                let read = try eventsRead(by: progress, f, on: c)
                // Walking back to the booking reads the 300 progress events; the command's own work reads a few.
                #expect(read < 50, "events read by one progress after 300: \(read)")
                let kept = try positions("v-long", on: c)
                #expect(kept.row == kept.fromTheLog && kept.row > 0, "the booking still names the technician: \(kept)")

                let reassigned = try VisitFixtures.command(
                    "v-long",
                    #"{"type": "reassigned", "technician": {"id": "t-2", "name": "Kim", "avatarSymbol": "person.kim", "vanDescription": "Blue van"}}"#
                )
                _ = try f.handler.executeBatch([reassigned], on: c)[0].get()
                _ = try f.handler.executeBatch(
                    [try VisitFixtures.command("v-long", #"{"type": "progress", "kilometresAway": 9}"#)], on: c)[0].get()
                let moved = try positions("v-long", on: c)
                #expect(moved.row == moved.fromTheLog && moved.row > kept.row, "the reassignment names her: \(moved)")
            }
        }
    }
}
