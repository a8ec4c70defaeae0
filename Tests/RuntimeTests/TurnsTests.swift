import Runtime
import Synchronization
import Testing

/// `Turns`: callers run their sections one at a time, in the order they arrived, and an error gives the turn
/// back like a return does.
@Suite(.timeLimit(.minutes(1))) struct TurnsTests {
    final class Counters: Sendable {
        let inside = Atomic<Int>(0)
        let most = Atomic<Int>(0)
        let ran = Atomic<Int>(0)
    }

    @Test func sectionsNeverOverlapAndEachRuns() async throws {
        let turns = Turns()
        let counters = Counters()
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<50 {
                group.addTask {
                    await turns.run {
                        let now = counters.inside.add(1, ordering: .relaxed).newValue
                        _ = counters.most.max(now, ordering: .relaxed)
                        // A section that takes a while, so that one running beside it would be seen in
                        // `inside` (the work under test, not a wait for it).
                        await Task.yield()
                        try? await Task.sleep(nanoseconds: 200_000)
                        counters.inside.subtract(1, ordering: .relaxed)
                        counters.ran.add(1, ordering: .relaxed)
                    }
                }
            }
        }
        #expect(counters.most.load(ordering: .relaxed) == 1)
        #expect(counters.ran.load(ordering: .relaxed) == 50)
    }

    @Test func aThrowingSectionGivesTheTurnBack() async throws {
        struct Failure: Error {}
        let turns = Turns()
        await #expect(throws: Failure.self) { try await turns.run { throw Failure() } }
        #expect(await turns.run { 7 } == 7)
    }
}
