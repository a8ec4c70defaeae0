import Foundation
import Runtime

/// The replay's stages run on threads of their own (never on Swift's cooperative pool: they block on
/// libpq and on each other), handing work on through `StageQueue`s.
enum ReplayStages {
    /// A stage stopped because another one failed.
    struct Cancelled: Error {}

    /// The first failure of any stage; the others see it and stop.
    final class Failure: Sendable {
        private let first = Lock<(any Error)?>(nil)
        func record(_ error: any Error) {
            first.withLock { if $0 == nil { $0 = error } }
        }
        var error: (any Error)? { first.withLock { $0 } }
    }

    /// Runs `body` on a thread of its own, in `group`; a thrown error is recorded in `failure` and `onError`
    /// runs (to cancel the queues, so every other stage stops too).
    static func start(
        _ name: String, in group: DispatchGroup, failure: Failure, onError: @escaping @Sendable () -> Void,
        _ body: @escaping @Sendable () throws -> Void
    ) {
        group.enter()
        let thread = Thread {
            defer { group.leave() }
            do {
                try body()
            } catch is Cancelled {
            } catch {
                failure.record(error)
                onError()
            }
        }
        thread.name = name
        thread.stackSize = 1 << 20
        thread.start()
    }
}

/// A bounded queue between two stages: `put` waits while it is full (back-pressure: a fast stage cannot run
/// far ahead of a slow one and fill memory), `take` waits while it is empty and returns nil once the
/// producer closed it and it is drained. `cancel` wakes both sides, which then throw `Cancelled`.
final class StageQueue<Element>: @unchecked Sendable {
    // `items`, `closed` and `cancelled` are only touched with `condition` locked.
    private let condition = NSCondition()
    private var items: [Element] = []
    private var head = 0
    private var closed = false
    private var cancelled = false
    private let capacity: Int
    /// Seconds spent waiting in `put` (the next stage was behind) and in `take` (the previous one was).
    private(set) var putWait = 0.0
    private(set) var takeWait = 0.0

    init(capacity: Int) { self.capacity = max(1, capacity) }

    func put(_ item: Element) throws {
        condition.lock()
        defer { condition.unlock() }
        if items.count - head >= capacity && !cancelled {
            let t0 = DispatchTime.now().uptimeNanoseconds
            while items.count - head >= capacity && !cancelled { condition.wait() }
            putWait += Double(DispatchTime.now().uptimeNanoseconds - t0) / 1e9
        }
        if cancelled { throw ReplayStages.Cancelled() }
        items.append(item)
        condition.broadcast()
    }

    func take() throws -> Element? {
        condition.lock()
        defer { condition.unlock() }
        if head == items.count && !closed && !cancelled {
            let t0 = DispatchTime.now().uptimeNanoseconds
            while head == items.count && !closed && !cancelled { condition.wait() }
            takeWait += Double(DispatchTime.now().uptimeNanoseconds - t0) / 1e9
        }
        if cancelled { throw ReplayStages.Cancelled() }
        guard head < items.count else { return nil }
        let item = items[head]
        head += 1
        if head > 64 && head * 2 > items.count {
            items.removeFirst(head)
            head = 0
        }
        condition.broadcast()
        return item
    }

    /// The producer is done: `take` returns nil once the queue is drained.
    func close() {
        condition.lock()
        closed = true
        condition.broadcast()
        condition.unlock()
    }

    /// A stage failed: everything waiting wakes and throws `Cancelled`, queued items are dropped.
    func cancel() {
        condition.lock()
        cancelled = true
        items = []
        head = 0
        condition.broadcast()
        condition.unlock()
    }

    var waits: (put: Double, take: Double) {
        condition.lock()
        defer { condition.unlock() }
        return (putWait, takeWait)
    }
}
