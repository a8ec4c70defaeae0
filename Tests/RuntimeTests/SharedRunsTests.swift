import Runtime
import Synchronization
import Testing

/// `SharedRuns`: an ask never takes the answer of a run that started before it; the asks that wait together
/// share the next run; keys do not wait for each other; a run's error reaches each of its asks.
@Suite(.timeLimit(.minutes(1))) struct SharedRunsTests {
    /// Holds runs until the test lets them go, and counts the runs made.
    final class Gate: Sendable {
        private let state = Mutex<(open: Bool, waiting: [CheckedContinuation<Void, Never>])>((false, []))
        let started = Atomic<Int>(0)

        func pass() async -> Int {
            let n = started.add(1, ordering: .relaxed).newValue
            await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
                let now = state.withLock { s -> Bool in
                    if s.open { return true }
                    s.waiting.append(c)
                    return false
                }
                if now { c.resume() }
            }
            return n
        }

        func open() {
            let waiting = state.withLock { s -> [CheckedContinuation<Void, Never>] in
                s.open = true
                defer { s.waiting = [] }
                return s.waiting
            }
            for c in waiting { c.resume() }
        }
    }

    /// Waits (yielding, never sleeping) until `condition` holds; fails the test after 10 s.
    func until(_ what: String, _ condition: () -> Bool) async throws {
        let deadline = ContinuousClock.now + .seconds(10)
        while !condition() {
            guard ContinuousClock.now < deadline else { throw Timeout(what: what) }
            await Task.yield()
        }
    }

    struct Timeout: Error { let what: String }
    struct Failed: Error {}

    @Test func asksThatCameDuringARunShareTheNextOne() async throws {
        let runs = SharedRuns<String, Int>()
        let gate = Gate()
        let first = Task { try await runs.value("board") { await gate.pass() } }
        try await until("the first run to start") { gate.started.load(ordering: .relaxed) == 1 }
        let second = Task { try await runs.value("board") { await gate.pass() } }
        let third = Task { try await runs.value("board") { await gate.pass() } }
        try await until("both asks to wait") { runs.counts.asks == 3 }
        #expect(gate.started.load(ordering: .relaxed) == 1, "an ask that came during a run started one of its own")
        gate.open()
        #expect(try await first.value == 1)
        // Both came after the first run started: neither may have its answer.
        #expect(try await second.value == 2)
        #expect(try await third.value == 2)
        #expect(runs.counts == (runs: 2, asks: 3))
        // Nothing under way: the next ask runs at once.
        #expect(try await runs.value("board") { 7 } == 7)
    }

    @Test func keysDoNotWaitForEachOther() async throws {
        let runs = SharedRuns<String, Int>()
        let gate = Gate()
        let held = Task { try await runs.value("a") { await gate.pass() } }
        try await until("the run of a to start") { gate.started.load(ordering: .relaxed) == 1 }
        #expect(try await runs.value("b") { 42 } == 42)
        gate.open()
        #expect(try await held.value == 1)
    }

    @Test func aRunsErrorReachesEveryAskOfIt() async throws {
        let runs = SharedRuns<String, Int>()
        let gate = Gate()
        let first = Task { try await runs.value("k") { await gate.pass() } }
        try await until("the first run to start") { gate.started.load(ordering: .relaxed) == 1 }
        let failing: [Task<Int, any Error>] = (0..<2).map { _ in
            Task {
                try await runs.value("k") {
                    _ = await gate.pass()
                    throw Failed()
                }
            }
        }
        try await until("both asks to wait") { runs.counts.asks == 3 }
        gate.open()
        #expect(try await first.value == 1)
        for task in failing { await #expect(throws: Failed.self) { try await task.value } }
        // The key is free again after a failed run.
        #expect(try await runs.value("k") { 3 } == 3)
    }
}
