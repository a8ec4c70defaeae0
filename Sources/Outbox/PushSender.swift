/// Where the worker sends pushes, in the outbox's own words: it hands over an `OutgoingPush` and gets a
/// `PushOutcome` back. In production the APNs client stands behind it (`APNsPushSender` in `OutboxAPNs`,
/// wired by the executable); in tests a recorder. Implementations must not block Swift's cooperative
/// pool and never throw: a failure is a value with its class (`PushFailure.Class`).
public protocol PushSender: Sendable {
    func send(_ push: OutgoingPush) async -> PushOutcome
    /// Sends several pushes at once and returns their outcomes in the same order. The worker sends each
    /// claimed batch this way; a sender that can submit many requests together (the APNs client: one
    /// hand-over to its HTTP/2 thread and one wake-up for the whole batch) implements it, others get the
    /// default, one child task per push.
    func sendAll(_ pushes: [OutgoingPush]) async -> [PushOutcome]
}

extension PushSender {
    public func sendAll(_ pushes: [OutgoingPush]) async -> [PushOutcome] {
        guard pushes.count > 1 else { return pushes.isEmpty ? [] : [await send(pushes[0])] }
        return await withTaskGroup(of: (Int, PushOutcome).self) { group in
            for (index, push) in pushes.enumerated() { group.addTask { (index, await send(push)) } }
            var outcomes = [PushOutcome?](repeating: nil, count: pushes.count)
            for await (index, outcome) in group { outcomes[index] = outcome }
            return outcomes.map { $0! }
        }
    }
}
