import APNs

/// Where the worker sends pushes: the `APNsClient` in production (it conforms as it is), a recorder in
/// tests. Implementations must not block Swift's cooperative pool and never throw: a failure is a value
/// with its classification (`APNsFailureClass`).
public protocol PushSender: Sendable {
    func send(_ request: APNsRequest) async -> APNsResult
}

extension APNsClient: PushSender {}
