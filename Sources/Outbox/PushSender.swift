/// Where the worker sends pushes, in the outbox's own words: it hands over an `OutgoingPush` and gets a
/// `PushOutcome` back. In production the APNs client stands behind it (`APNsPushSender` in `OutboxAPNs`,
/// wired by the executable); in tests a recorder. Implementations must not block Swift's cooperative
/// pool and never throw: a failure is a value with its class (`PushFailure.Class`).
public protocol PushSender: Sendable {
    func send(_ push: OutgoingPush) async -> PushOutcome
}
