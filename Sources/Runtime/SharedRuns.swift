/// One run of a read at a time per key, shared by every ask that waited for it: an ask that comes while a run of
/// its key is under way waits for the next run, which starts once that one ends and answers every ask that came
/// meanwhile. An ask never takes the answer of a run that started before it, so every answer shows everything
/// committed before it was asked for; under load, identical asks (a hundred consoles polling the same board)
/// cost one read per run instead of one each, and the more they queue the more each run answers.
///
/// The runs of a key must be interchangeable (the same read for whoever asks): a run is made by whichever ask
/// started it. A run's error is every waiting ask's answer.
public final class SharedRuns<Key: Hashable & Sendable, Value: Sendable>: Sendable {
    public typealias Run = @Sendable () async throws -> Value
    private typealias Waiter = CheckedContinuation<Value, any Error>

    private struct State {
        /// Per key with a run under way: the asks waiting for the next run, each with the run it would make.
        var underWay: [Key: [(waiter: Waiter, run: Run)]] = [:]
        var runs = 0
        var asks = 0
    }
    private let state = Lock(State())

    public init() {}

    /// Runs made and asks answered so far (for tests and metrics).
    public var counts: (runs: Int, asks: Int) { state.withLock { ($0.runs, $0.asks) } }

    /// The value of a run of `key` that starts after this call: `run` itself when no run of the key is under
    /// way, else the next run, shared.
    public func value(_ key: Key, _ run: @escaping Run) async throws -> Value {
        try await withCheckedThrowingContinuation { (waiter: Waiter) in
            let starts = state.withLock { s -> Bool in
                s.asks += 1
                guard s.underWay[key] == nil else {
                    s.underWay[key]?.append((waiter, run))
                    return false
                }
                s.underWay[key] = []
                return true
            }
            if starts { Task { await self.drive(key, [waiter], run) } }
        }
    }

    /// Makes runs of `key` while asks wait for one, each answering those that came before it started; the next
    /// run is the first waiting ask's.
    private func drive(_ key: Key, _ first: [Waiter], _ firstRun: @escaping Run) async {
        var waiting = first
        var run = firstRun
        while true {
            let result: Result<Value, any Error>
            do { result = .success(try await run()) } catch { result = .failure(error) }
            let next = state.withLock { s -> [(waiter: Waiter, run: Run)] in
                s.runs += 1
                let next = s.underWay[key] ?? []
                s.underWay[key] = next.isEmpty ? nil : []
                return next
            }
            for waiter in waiting { waiter.resume(with: result) }
            guard let lead = next.first else { return }
            waiting = next.map(\.waiter)
            run = lead.run
        }
    }
}
