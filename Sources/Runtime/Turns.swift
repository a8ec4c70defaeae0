/// One at a time, in order of arrival: an async section that callers run in turns (a mutex that suspends
/// instead of blocking a thread). For short sections only; a waiting turn is not cancelled.
public final class Turns: Sendable {
    private struct State {
        var taken = false
        var waiting: [CheckedContinuation<Void, Never>] = []
    }
    private let state = Lock(State())

    public init() {}

    /// Runs `body` once every earlier caller's `body` has returned.
    public func run<T: Sendable>(_ body: () async throws -> T) async rethrows -> T {
        await take()
        defer { give() }
        return try await body()
    }

    private func take() async {
        await withCheckedContinuation { (turn: CheckedContinuation<Void, Never>) in
            let now = state.withLock { s -> Bool in
                if s.taken {
                    s.waiting.append(turn)
                    return false
                }
                s.taken = true
                return true
            }
            if now { turn.resume() }
        }
    }

    private func give() {
        let next = state.withLock { s -> CheckedContinuation<Void, Never>? in
            if s.waiting.isEmpty {
                s.taken = false
                return nil
            }
            return s.waiting.removeFirst()
        }
        next?.resume()
    }
}
