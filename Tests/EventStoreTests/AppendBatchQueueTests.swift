@testable import EventStore
import Testing

/// The group-commit queue's state machine, without a database.
@Suite struct AppendBatchQueueTests {
    typealias Queue = AppendBatchQueue<Int>

    @Test func aLoneAppendWakesAWorkerAndLaterOnesWaitForOne() {
        var queue = Queue(configuration: GroupCommit(maxConcurrentBatches: 2))
        do { let got = queue.enqueue(1, events: 1); #expect(got == .start(worker: 0)) }
        do { let got = queue.next(worker: 0); #expect(got == [1]) }
        do { let got = queue.enqueue(2, events: 1); #expect(got == .start(worker: 1)) }
        do { let got = queue.next(worker: 1); #expect(got == [2]) }
        // Both workers busy: arrivals accumulate without waking anyone.
        do { let got = queue.enqueue(3, events: 1); #expect(got == .none) }
        do { let got = queue.enqueue(4, events: 1); #expect(got == .none) }
        do { let got = queue.enqueue(5, events: 1); #expect(got == .none) }
        // The first worker to come back takes everything waiting, in arrival order.
        do { let got = queue.next(worker: 1); #expect(got == [3, 4, 5]) }
        do { let got = queue.next(worker: 0); #expect(got == nil) }
        #expect(queue.workers == [.idle, .busy])
        // An idle worker is signalled, not started again; it is busy from the signal on.
        do { let got = queue.enqueue(6, events: 1); #expect(got == .signal(worker: 0)) }
        do { let got = queue.enqueue(7, events: 1); #expect(got == .none) }
        do { let got = queue.next(worker: 0); #expect(got == [6, 7]) }
    }

    @Test func idleWorkersStopUnlessWokenMeanwhile() {
        var queue = Queue(configuration: GroupCommit(maxConcurrentBatches: 1))
        do { let got = queue.enqueue(1, events: 1); #expect(got == .start(worker: 0)) }
        do { let got = queue.next(worker: 0); #expect(got == [1]) }
        do { let got = queue.next(worker: 0); #expect(got == nil) }
        // Signalled just as its wait timed out: it must keep going and find the append.
        do { let got = queue.enqueue(2, events: 1); #expect(got == .signal(worker: 0)) }
        do { let stops = queue.idleTimedOut(worker: 0); #expect(!stops) }
        do { let got = queue.next(worker: 0); #expect(got == [2]) }
        do { let got = queue.next(worker: 0); #expect(got == nil) }
        do { let stops = queue.idleTimedOut(worker: 0); #expect(stops) }
        #expect(queue.workers == [.stopped])
        do { let got = queue.enqueue(3, events: 1); #expect(got == .start(worker: 0)) }
    }

    @Test func batchesStopAtTheSizeAndEventLimits() {
        var queue = Queue(configuration: GroupCommit(maxBatchSize: 3, maxBatchEvents: 10, maxConcurrentBatches: 1))
        do { let got = queue.enqueue(0, events: 1); #expect(got == .start(worker: 0)) }
        for i in 1...7 { #expect(queue.enqueue(i, events: 1) == .none) }
        do { let got = queue.next(worker: 0); #expect(got == [0, 1, 2]) }
        do { let got = queue.next(worker: 0); #expect(got == [3, 4, 5]) }
        do { let got = queue.next(worker: 0); #expect(got == [6, 7]) }
        do { let got = queue.next(worker: 0); #expect(got == nil) }
        // 6 + 6 events > 10, so the second append waits for the next batch; an oversized first still goes.
        do { let got = queue.enqueue(8, events: 20); #expect(got == .signal(worker: 0)) }
        do { let got = queue.enqueue(9, events: 6); #expect(got == .none) }
        do { let got = queue.enqueue(10, events: 6); #expect(got == .none) }
        do { let got = queue.next(worker: 0); #expect(got == [8]) }
        do { let got = queue.next(worker: 0); #expect(got == [9]) }
        do { let got = queue.next(worker: 0); #expect(got == [10]) }
        #expect(queue.waitingCount == 0)
    }

    @Test func aStreamIsInOneBatchAtATimeAndRepeatsKeepTheirOrder() {
        var queue = Queue(configuration: GroupCommit(maxConcurrentBatches: 2))
        do { let got = queue.enqueue(1, events: 1, exclusive: ["s:a"]); #expect(got == .start(worker: 0)) }
        do { let got = queue.enqueue(2, events: 1, exclusive: ["s:a"]); #expect(got == .start(worker: 1)) }
        do { let got = queue.enqueue(3, events: 1, exclusive: ["s:b"]); #expect(got == .none) }
        do { let got = queue.enqueue(4, events: 1, exclusive: ["s:a"]); #expect(got == .none) }
        // Worker 0 takes one append per stream; the repeats of `a` wait, in order.
        do { let got = queue.next(worker: 0); #expect(got == [1, 3]) }
        // `a` is in flight on worker 0, so worker 1 finds nothing it may take.
        do { let got = queue.next(worker: 1); #expect(got == nil) }
        // Worker 0 finished: its next batch is the next `a`, and only that one.
        do { let got = queue.next(worker: 0); #expect(got == [2]) }
        do { let got = queue.next(worker: 0); #expect(got == [4]) }
        do { let got = queue.next(worker: 0); #expect(got == nil) }
        #expect(queue.waitingCount == 0)
    }
}
