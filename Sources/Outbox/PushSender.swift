/// Where the worker sends pushes: the APNs client in production, a recorder in tests.
/// Implementations must not block Swift's cooperative pool and must never throw: a failure is a value.
public protocol PushSender: Sendable {
    func send(_ request: PushRequest) async -> PushOutcome
}
