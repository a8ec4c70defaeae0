import HTTPServer
import Runtime

/// `/readyz`'s latest answer. `/readyz` needs no key and its probe asks the database a couple of dozen
/// questions, so however often it is called, it probes at most once per `seconds`: callers while a probe
/// runs wait for that probe, callers within `seconds` of its end get its answer.
final class ReadinessCache: Sendable {
    private struct State {
        /// Moves with every new probe, so an older probe's end does not date a newer one.
        var generation: UInt64 = 0
        var probe: Task<HTTPResponse, Never>?
        /// When `probe` ended (the clock's time); nil while it runs.
        var finishedAt: Double?
    }
    private let state = Lock(State())

    /// The answer of a probe that is running or ended less than `seconds` ago on `clock`, else of a new
    /// `probe`. With `seconds` at 0, every call probes.
    func answer(
        seconds: Double, clock: any WallClock, probe: @escaping @Sendable () async -> HTTPResponse
    ) async -> HTTPResponse {
        guard seconds > 0 else { return await probe() }
        let now = clock.now()
        let running = state.withLock { state -> Task<HTTPResponse, Never> in
            if let current = state.probe, state.finishedAt.map({ now - $0 < seconds }) ?? true { return current }
            state.generation &+= 1
            let generation = state.generation
            // Not the caller's task: a caller that gives up (its deadline) leaves the others their answer.
            let task = Task { [self] in
                let response = await probe()
                let finishedAt = clock.now()
                self.state.withLock { if $0.generation == generation { $0.finishedAt = finishedAt } }
                return response
            }
            state.probe = task
            state.finishedAt = nil
            return task
        }
        return await running.value
    }
}
