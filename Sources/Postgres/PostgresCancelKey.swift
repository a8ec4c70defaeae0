import CLibPQ

/// What cancels the statement a connection is running, from any thread: libpq's `PGcancel` for that
/// connection's backend (`PQgetCancel` on the connection's own thread; `PQcancel` is documented as safe
/// to call from another one, and sends the request over a connection of its own).
final class PostgresCancelKey: @unchecked Sendable {
    // `handle` is written once in `init` and only read after; PQcancel takes no lock of ours.
    private let handle: OpaquePointer

    init?(connection: OpaquePointer) {
        guard let handle = PQgetCancel(connection) else { return nil }
        self.handle = handle
    }

    deinit { PQfreeCancel(handle) }

    /// Asks the server to cancel what the connection is running now; false if the request could not be sent.
    @discardableResult
    func cancel() -> Bool {
        var message = [CChar](repeating: 0, count: 256)
        return PQcancel(handle, &message, Int32(message.count)) == 1
    }
}
