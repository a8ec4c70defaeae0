import CMicroHTTPD  // sys/socket.h: SHUT_RDWR
import Runtime

#if canImport(Glibc)
    import Glibc
#endif

/// The open connections and how long each has been receiving its current request: the whole-request
/// deadline that libmicrohttpd's idle timeout (restarted by every byte) cannot give.
///
/// A connection is *receiving* from its opening, and again from the moment each answer has been sent
/// (so on a kept-alive connection idle time counts towards the next request), until its request is
/// complete; then it is *answering*, with no deadline here (the handler deadline and the idle timeout
/// cover that part). `shutOverdue` shuts (`shutdown(2)`, both ways) the sockets of connections receiving
/// for longer than the limit: libmicrohttpd sees the end of the stream on its own thread and closes the
/// connection itself, so no MHD call is made from outside its threads.
///
/// The shutdown happens under the lock that the close notification takes, and libmicrohttpd notifies
/// before it closes the socket: the descriptor shut is never one already reused by another connection.
final class ConnectionDeadlines: Sendable {
    private struct Entry {
        let socket: Int32
        /// When the current request began to be received; nil while answering or once shut.
        var receivingSince: Double?
    }

    private let entries = Lock<[Int: Entry]>([:])

    private static func key(_ connection: OpaquePointer) -> Int { Int(bitPattern: connection) }

    /// libmicrohttpd accepted `connection` (its first request is being received from now).
    func opened(_ connection: OpaquePointer, socket: Int32, at now: Double) {
        entries.withLock { $0[Self.key(connection)] = Entry(socket: socket, receivingSince: now) }
    }

    /// libmicrohttpd is closing `connection` (its socket is still open).
    func closed(_ connection: OpaquePointer) {
        _ = entries.withLock { $0.removeValue(forKey: Self.key(connection)) }
    }

    /// The request is in, whole: no deadline until its answer has been sent.
    func arrived(_ connection: OpaquePointer) {
        entries.withLock { $0[Self.key(connection)]?.receivingSince = nil }
    }

    /// The answer has been sent (or the request ended otherwise): the next request is being received.
    func answered(_ connection: OpaquePointer, at now: Double) {
        entries.withLock { entries in
            let key = Self.key(connection)
            guard entries[key] != nil else { return }
            entries[key]?.receivingSince = now
        }
    }

    /// Shuts the sockets of connections that have been receiving for `limit` seconds or more at `now`;
    /// returns how many.
    func shutOverdue(at now: Double, limit: Double) -> Int {
        entries.withLock { entries in
            let overdue = entries.filter { _, entry in entry.receivingSince.map { now - $0 >= limit } ?? false }
            for (key, entry) in overdue {
                _ = Glibc.shutdown(entry.socket, Int32(SHUT_RDWR))
                entries[key]?.receivingSince = nil
            }
            return overdue.count
        }
    }

    /// Connections open now.
    var openCount: Int { entries.withLock { $0.count } }
}
