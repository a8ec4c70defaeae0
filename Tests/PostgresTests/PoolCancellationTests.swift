import Dispatch
import Foundation
import TestSupport
import Testing

@testable import Postgres

/// A caller waiting for a connection gives up when its task is cancelled: it leaves the queue at once and
/// throws `CancellationError`, the slot it waited for goes to the next waiter, and nothing leaks.
@Suite(.timeLimit(.minutes(1))) struct PoolCancellationTests {
    @Test func aCancelledWaiterLeavesTheQueueAndTheSlotGoesToTheNext() async throws {
        let url = try await TestDatabase.createMigrated()
        // A waiter that ignored cancellation would wait this long and then answer `.poolTimeout`, while
        // the connection is still held: the test would see that instead of CancellationError.
        try await PostgresPool.withPool(PostgresConfiguration(url: url, size: 1, acquireTimeoutSeconds: 20)) { pool in

            // The only connection, held on its own thread until `gate` opens.
            let gate = DispatchSemaphore(value: 0)
            let holder = Task {
                try await pool.withConnection { c -> Int in
                    gate.wait()
                    return try c.query("SELECT 1 AS n").first!.int("n")
                }
            }
            // Held before the first waiter asks: asked side by side, the waiter could take it first.
            try await eventually("the connection is held", within: 30) { pool.freeCount == 0 }
            let first = Task { try await pool.withConnection { try $0.query("SELECT 'first' AS w").first!.string("w") } }
            try await eventually("the first waiter is queued", within: 30) { pool.waitingCount == 1 }
            let second = Task { try await pool.withConnection { try $0.query("SELECT 'second' AS w").first!.string("w") } }
            try await eventually("the second waiter is queued", within: 30) { pool.waitingCount == 2 }

            first.cancel()
            // Answered while the connection is still held: the waiter did not wait for it.
            let outcome = await first.result
            #expect(throws: CancellationError.self) { try outcome.get() }
            #expect(pool.waitingCount == 1)

            gate.signal()
            #expect(try await holder.value == 1)
            #expect(try await second.value == "second")
            // The slot came back: the pool serves again at once, and nobody is left waiting.
            #expect(try await pool.withConnection { try $0.query("SELECT 3 AS n").first!.int("n") } == 3)
            #expect(pool.waitingCount == 0)
        }
    }

    @Test func aTaskCancelledBeforeItAsksIsRefusedAPlaceButGetsAFreeSlot() async throws {
        try await withTestDatabase(poolSize: 1) { _, pool in
            // A free slot is lent even to a cancelled task (work that must finish while shutting down).
            let free = Task {
                withUnsafeCurrentTask { $0?.cancel() }
                return try await pool.withConnection { try $0.query("SELECT 1 AS n").first!.int("n") }
            }
            #expect(try await free.value == 1)

            let gate = DispatchSemaphore(value: 0)
            let holder = Task { try await pool.withConnection { _ in gate.wait() } }
            try await eventually("the connection is held", within: 30) { pool.freeCount == 0 }
            let late = Task {
                withUnsafeCurrentTask { $0?.cancel() }
                return try await pool.withConnection { _ in 1 }
            }
            let outcome = await late.result
            #expect(throws: CancellationError.self) { try outcome.get() }
            #expect(pool.waitingCount == 0)
            gate.signal()
            try await holder.value
        }
    }
}
