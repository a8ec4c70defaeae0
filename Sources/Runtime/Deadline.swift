/// `body`'s result, or nil when `seconds` pass first. The body runs in a task of its own, is cancelled at
/// the deadline and otherwise left to finish by itself (work on a database connection cannot be cut
/// short, and a task group would wait for it): the caller's answer never waits past the deadline.
public func withDeadline<T: Sendable>(seconds: Double, _ body: @escaping @Sendable () async -> T) async -> T? {
    let answer = FirstAnswer<T?>()
    return await withCheckedContinuation { (continuation: CheckedContinuation<T?, Never>) in
        answer.wait(with: continuation)
        let work = Task { answer.give(await body()) }
        Task {
            try? await Task.sleep(nanoseconds: UInt64(max(0, seconds) * 1e9))
            if answer.give(nil) { work.cancel() }
        }
    }
}

/// One continuation resumed by whichever answer comes first.
private final class FirstAnswer<T: Sendable>: Sendable {
    private let waiting = Lock<CheckedContinuation<T, Never>?>(nil)

    func wait(with continuation: CheckedContinuation<T, Never>) { waiting.withLock { $0 = continuation } }

    /// Resumes the waiter with `value` unless another answer came first; true if this one did.
    @discardableResult
    func give(_ value: T) -> Bool {
        guard let continuation = waiting.withLock({ $0.take() }) else { return false }
        continuation.resume(returning: value)
        return true
    }
}
