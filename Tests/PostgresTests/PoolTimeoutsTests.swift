import Foundation
import Synchronization
import TestSupport
import Testing

@testable import Postgres

/// The pool's deadlines (work and acquire timeouts) under one ticking timer: a deadline fires once, about
/// when it is due; one taken out never fires; the timer stops when none is left.
@Suite(.timeLimit(.minutes(1))) struct PoolTimeoutsTests {
    @Test func aDeadlineFiresOnceWhenDueAndTheTimerThenStops() async throws {
        let timeouts = PoolTimeouts(tick: 0.01)
        let fired = Mutex<[Double]>([])
        let started = Date()
        let id = timeouts.add(after: 0.2) { fired.withLock { $0.append(Date().timeIntervalSince(started)) } }
        #expect(timeouts.ticking)
        try await eventually("the deadline fired and the timer stopped", within: 5) {
            fired.withLock { !$0.isEmpty } && !timeouts.ticking
        }
        let times = fired.withLock { $0 }
        #expect(times.count == 1)
        #expect(times[0] >= 0.2, "fired at \(times[0]) s, before its 0.2 s")
        #expect(!timeouts.remove(id), "a deadline that fired is no longer there")
        // No deadline left and no timer: nothing can fire any more, so the count is final.
        #expect(timeouts.count == 0 && !timeouts.ticking)
        #expect(fired.withLock { $0.count } == 1, "fired once")
    }

    @Test func aDeadlineTakenOutNeverFires() async throws {
        let timeouts = PoolTimeouts(tick: 0.01)
        let fired = Mutex(0)
        let early = timeouts.add(after: 0.05) { fired.withLock { $0 += 1 } }
        let late = timeouts.add(after: 0.3) { fired.withLock { $0 += 100 } }
        #expect(timeouts.remove(late))
        try await eventually("the early deadline fired and the timer stopped", within: 5) {
            fired.withLock { $0 } == 1 && !timeouts.ticking
        }
        // No deadline left and no timer: the one taken out can no longer fire.
        #expect(timeouts.count == 0 && !timeouts.ticking)
        #expect(fired.withLock { $0 } == 1, "only the deadline left in fired")
        #expect(!timeouts.remove(early))
    }

    /// The acquire timeout through the pool: a caller waiting behind a busy connection gets `.poolTimeout`
    /// (not before its timeout; the busy work takes longer), and the connection, once free, serves the next caller at once.
    @Test func aWaiterGetsThePoolTimeoutAndTheSlotStillServes() async throws {
        let url = try await TestDatabase.createMigrated()
        let configuration = PostgresConfiguration(url: url, size: 1, acquireTimeoutSeconds: 0.3)
        try await PostgresPool.withPool(configuration) { pool in
            let busy = Task { try await pool.withConnection { try $0.execute(script: "SELECT pg_sleep(1.5)") } }
            try await eventually("the only connection is lent", within: 5) { pool.freeCount == 0 }
            let started = Date()
            do {
                try await pool.query("SELECT 1")
                Issue.record("a second caller got the only connection while it was busy")
            } catch let error as PostgresError {
                #expect(error.code == .poolTimeout)
                #expect(error.message.contains("within 0.3 s"), "\(error.message)")
            }
            let waited = Date().timeIntervalSince(started)
            #expect(waited >= 0.3, "gave up after \(waited) s, before its 0.3 s acquire timeout")
            #expect(pool.waitingCount == 0)
            try await busy.value
            #expect(try await pool.query("SELECT 1 AS one").first?.int("one") == 1)
        }
    }
}
