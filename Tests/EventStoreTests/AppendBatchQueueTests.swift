@testable import EventStore
import Testing

/// The group-commit queue's state machine, without a database.
@Suite struct AppendBatchQueueTests {
    @Test func aLoneAppendLeavesAtOnceAndLaterOnesWaitForAFreeSlot() {
        var queue = AppendBatchQueue<Int>(configuration: GroupCommit(maxConcurrentBatches: 2))
        #expect(queue.enqueue(1, events: 1) == [1])
        #expect(queue.enqueue(2, events: 1) == [2])
        // Both slots busy: arrivals accumulate.
        #expect(queue.enqueue(3, events: 1) == nil)
        #expect(queue.enqueue(4, events: 1) == nil)
        #expect(queue.enqueue(5, events: 1) == nil)
        #expect(queue.inFlight == 2)
        // The first slot to free up takes everything waiting, in arrival order.
        #expect(queue.batchFinished() == [3, 4, 5])
        #expect(queue.batchFinished() == nil)
        #expect(queue.inFlight == 1)
        #expect(queue.batchFinished() == nil)
        #expect(queue.inFlight == 0)
        #expect(queue.enqueue(6, events: 1) == [6])
    }

    @Test func batchesStopAtTheSizeAndEventLimits() {
        var queue = AppendBatchQueue<Int>(configuration: GroupCommit(maxBatchSize: 3, maxBatchEvents: 10, maxConcurrentBatches: 1))
        #expect(queue.enqueue(0, events: 1) == [0])
        for i in 1...7 { #expect(queue.enqueue(i, events: 1) == nil) }
        #expect(queue.batchFinished() == [1, 2, 3])
        #expect(queue.batchFinished() == [4, 5, 6])
        #expect(queue.batchFinished() == [7])
        #expect(queue.batchFinished() == nil)
        // Events: 6 + 6 > 10, so the second append waits for the next batch; an oversized first still goes.
        #expect(queue.enqueue(8, events: 20) == [8])
        #expect(queue.enqueue(9, events: 6) == nil)
        #expect(queue.enqueue(10, events: 6) == nil)
        #expect(queue.batchFinished() == [9])
        #expect(queue.batchFinished() == [10])
        #expect(queue.waitingCount == 0)
    }
}
