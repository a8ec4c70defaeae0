import Foundation
import Runtime
import Synchronization

/// What the server keeps about one request between libmicrohttpd's calls: the upload so far,
/// the response queued, and the answer a handler task hands back.
///
/// It travels through C as `*con_cls`, retained once in the first access-handler call and released
/// in `MHD_OPTION_NOTIFY_COMPLETED` (so an aborted upload frees it too).
final class RequestContext: @unchecked Sendable {
    // @unchecked Sendable: the `var`s are touched only by the libmicrohttpd polling thread that owns
    // the connection (MHD calls one connection's callbacks from one thread, one at a time);
    // `pending`, the only state a handler task touches, is guarded by its own lock.

    let serial: UInt64
    /// The MHD connection; valid until `MHD_OPTION_NOTIFY_COMPLETED` for this request.
    nonisolated(unsafe) let connection: OpaquePointer
    let method: String
    let rawPath: String
    let version: String
    let requestID: String
    /// Monotonic start, for the duration in the log line and the latency histogram.
    let startedAt: ContinuousClock.Instant

    /// Counts live contexts per server, so tests can prove aborted requests are released.
    let tracker: InstanceCounter

    var body = Data()
    /// The body went over the limit: the rest is discarded and the answer is 413.
    var overflowed = false
    var discardedBytes = 0
    /// The answer closes the connection (the request's framing is ambiguous: the rest of the stream
    /// cannot be read as a next request).
    var closesConnection = false
    /// The handler was started; the next call must find its answer in `pending`.
    var dispatched = false
    /// Set once a response is queued with MHD.
    var status: Int?
    var route: String?
    var logMetadata: [String: String] = [:]

    /// The handler's (or the deadline's) answer, waiting for the connection to resume.
    let pending = Lock<HTTPResponse?>(nil)

    init(
        serial: UInt64, connection: OpaquePointer, method: String, rawPath: String, version: String,
        requestID: String, tracker: InstanceCounter
    ) {
        self.serial = serial
        self.connection = connection
        self.method = method
        self.rawPath = rawPath
        self.version = version
        self.requestID = requestID
        self.startedAt = ContinuousClock.now
        self.tracker = tracker
        tracker.value.add(1, ordering: .relaxed)
    }

    deinit { tracker.value.subtract(1, ordering: .relaxed) }
}

/// A count of live objects of one kind.
final class InstanceCounter: Sendable {
    let value = Atomic<Int>(0)
}
