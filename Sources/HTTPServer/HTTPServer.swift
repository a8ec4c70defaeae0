import CMicroHTTPD
import Foundation
import Runtime

#if canImport(Glibc)
    import Glibc
#endif

/// Answers one request. Handlers run as Swift tasks, never on libmicrohttpd's threads.
public typealias HTTPHandler = @Sendable (HTTPRequest) async -> HTTPResponse

/// An HTTP/1.1 server on libmicrohttpd (no hand-written parser on the public port).
///
/// libmicrohttpd's own epoll threads read requests; once a request is fully received its connection
/// is suspended, the handler runs in a Swift `Task`, and the answer resumes the connection. So MHD
/// threads never wait on the database and Swift's cooperative pool never blocks on a socket.
///
/// ```swift
/// var router = Router()
/// router.add(.get, "/healthz") { _, _ in .json(body: Data(#"{"ok":true}"#.utf8)) }
/// let server = try HTTPServer(configuration: config, handler: router.handler)
/// print(server.address.port)          // bound already, before run()
/// try await ServiceGroup(services: [server]).run()
/// ```
///
/// `run()` serves until its task is cancelled, then shuts down gracefully: stop accepting
/// (`AcceptLoop.stop()`), let in-flight requests finish within `shutdownGracePeriod`, answer 503
/// to whatever still runs after that, and stop the daemon.
public final class HTTPServer: Service, Sendable {
    /// The service's name in the service group's logs.
    public let name = "http-server"
    /// The configuration the server was made with.
    public let configuration: HTTPServerConfiguration
    let handler: HTTPHandler
    let clock: any WallClock
    let logger: Logger
    let requestMetrics: HTTPRequestMetrics
    let registry = RequestRegistry()
    let deadlines = ConnectionDeadlines()
    let liveContexts = InstanceCounter()
    let socket: ListeningSocket
    /// The running server's accept thread (told of each close).
    let acceptLoop = Lock<AcceptLoop?>(nil)

    /// Bytes of an oversized upload discarded before the connection is cut instead of answered.
    var discardLimit: Int { max(1 << 20, configuration.maxBodyBytes * 16) }

    /// Binds the listening socket at once (so `address` holds the real port) and prepares the server.
    ///
    /// - Parameters:
    ///   - clock: decides when a handler is overdue and when the shutdown grace period ends.
    ///   - metrics: the registry whose `render()` includes `livevisits_http_requests_total` and
    ///     `livevisits_http_request_seconds` (registered once per server, as a collector).
    /// - Throws: `HTTPServerError` (`invalidConfiguration`, `bindFailed`, …).
    public init(
        configuration: HTTPServerConfiguration,
        clock: any WallClock = SystemClock(),
        logger: Logger = Logger(label: "http"),
        metrics: Metrics = .shared,
        handler: @escaping HTTPHandler
    ) throws(HTTPServerError) {
        try configuration.validate()
        self.configuration = configuration
        self.clock = clock
        self.logger = logger
        self.requestMetrics = HTTPRequestMetrics(registry: metrics)
        self.handler = handler
        self.socket = try ListeningSocket(binding: configuration.listenAddress, backlog: 1024)
    }

    /// The address bound, with the real port when port 0 was asked for.
    public var address: ListenAddress { socket.address }

    /// Requests received and not yet completed (in a handler, uploading, or being sent).
    public var activeRequests: Int { registry.counts.active }

    /// Connections open now (accepted by libmicrohttpd and not yet closed).
    public var openConnections: Int { deadlines.openCount }

    /// Connections served by the threads of held requests so far (see `holdingPathPrefixes`).
    public var holdingConnections: Int { acceptLoop.withLock { $0 }?.holdingConnections ?? 0 }

    /// Requests finished so far for one `livevisits_http_requests_total` series
    /// (`route` is the template or `unmatched`, `status` the code sent or `none`).
    public func requestCount(route: String, method: String, status: String) -> UInt64 {
        requestMetrics.count(route: route, method: method, status: status)
    }

    /// Serves until the calling task is cancelled, then shuts down gracefully and returns.
    ///
    /// - Throws: `HTTPServerError` when called twice or when libmicrohttpd cannot start.
    public func run() async throws {
        guard registry.start() else {
            throw HTTPServerError(code: .alreadyStarted, message: "an HTTPServer runs only once")
        }
        guard let fd = socket.handOver() else {
            registry.finish()
            throw HTTPServerError(code: .daemonStartFailed, message: "the listening socket is closed")
        }
        guard let daemons = startDaemons() else {
            _ = Glibc.close(fd)
            registry.finish()
            throw HTTPServerError(code: .daemonStartFailed, message: "libmicrohttpd refused to start")
        }
        let acceptor = AcceptLoop(
            listening: fd, daemons: daemons, connectionLimit: configuration.connectionLimit,
            addressLimit: configuration.perAddressConnectionLimit, holdingPrefixes: configuration.holdingPathPrefixes)
        acceptLoop.withLock { $0 = acceptor }
        acceptor.start()
        logger.info("http server listening", ["http.address": address.description])

        await tickUntilCancelled()
        // The shutdown must itself wait on time, which a cancelled task cannot: run it in a fresh task.
        await Task { await self.shutDown(daemons, acceptor: acceptor, listenFD: fd) }.value
    }

    /// How often overdue handlers and requests are looked for (the injected clock decides which are overdue).
    static let tick = Duration.milliseconds(50)
    /// How long the stopped server waits for the answers it just gave to be written.
    static let writeOutLimit = Duration.seconds(1)

    /// Answers overdue handlers every `tick` until the calling task is cancelled.
    private func tickUntilCancelled() async {
        while !Task.isCancelled {
            do { try await Task.sleep(for: Self.tick) } catch { return }
            answerOverdue()
            dropSlowRequests()
        }
    }

    /// Closes the connections whose request has not arrived whole within `requestReceiveTimeout`.
    func dropSlowRequests() {
        let dropped = deadlines.shutOverdue(at: clock.now(), limit: configuration.requestReceiveTimeout)
        if dropped > 0 {
            logger.warning("http requests too slow to arrive, connections closed", ["http.closed": String(dropped)])
        }
    }

    /// Answers 503 `timeout` for handlers past `requestTimeout` and cancels their tasks.
    func answerOverdue() {
        for (serial, task) in registry.overdue(at: clock.now()) {
            // Answer first, then cancel: a handler that ends quickly on cancellation must not answer first.
            deliver(
                serial,
                .error(status: 503, code: "timeout", message: "The request took too long to process; try again."))
            InlineTaskExecutor.deferringJobs { task?.cancel() }
        }
    }

    /// Hands an answer to a suspended connection and resumes it (any thread). The first answer wins.
    func deliver(_ serial: UInt64, _ response: HTTPResponse) {
        guard let context = registry.claim(serial) else { return }
        context.pending.withLock { $0 = response }
        MHD_resume_connection(context.connection)
        registry.resumed()
    }

    private func shutDown(_ daemons: Daemons, acceptor: AcceptLoop, listenFD: Int32) async {
        // The grace runs from the moment shutdown begins, before new connections are refused: a caller that sees
        // them refused (a test advancing its clock then) must not find the grace measured from later.
        let graceEnds = clock.now() + configuration.shutdownGracePeriod
        registry.beginDraining()
        // The accept thread may still touch the socket, so it is closed only after that thread has ended and
        // MHD is stopped (closing it earlier let its number be reused); `stop()` makes Linux refuse new
        // connections on it now.
        acceptor.stop()
        logger.info("http server draining", ["http.active": String(registry.counts.active)])

        // Until the last request completes or the grace ends on the clock; handlers that run past their own
        // deadline meanwhile are still answered (the tick).
        let clock = self.clock
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await self.tickUntilCancelled() }
            await registry.wait(until: .noneActive) {
                try? await clock.sleep(seconds: graceEnds - clock.now())
            }
            group.cancelAll()
        }
        let unfinished = registry.beginStopping()
        if !unfinished.isEmpty {
            logger.warning("http server grace period over", ["http.unfinished": String(unfinished.count)])
        }
        for (serial, task) in unfinished {
            deliver(serial, .error(status: 503, code: "shutting_down", message: "The server is shutting down; try again."))
            InlineTaskExecutor.deferringJobs { task?.cancel() }
        }
        // MHD must not be stopped while a connection is suspended: wait for every resume to return.
        await registry.wait(until: .noneSuspended)
        // Give the answers just resumed a moment to be written (bounded, in real time: a peer may not read).
        await registry.wait(until: .noneActive) { try? await Task.sleep(for: Self.writeOutLimit) }
        // Once the accept thread has ended no connection is added; MHD_stop_daemon joins MHD's threads. Both
        // block: wait for them off the cooperative pool.
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            Thread.detachNewThread {
                acceptor.waitUntilEnded()
                for handle in daemons.all { MHD_stop_daemon(handle.daemon) }
                _ = Glibc.close(listenFD)
                done.resume()
            }
        }
        registry.finish()
        logger.info("http server stopped")
    }
}

/// The running daemon, passed from `run()` to the shutdown task.
final class DaemonHandle: @unchecked Sendable {
    // @unchecked Sendable: the pointer is written once. MHD_add_connection is called on it by the accept
    // thread alone (MHD allows that from any thread), and MHD_stop_daemon by the shutdown sequence only
    // once that thread has ended.
    let daemon: OpaquePointer
    init(_ daemon: OpaquePointer) { self.daemon = daemon }
}
