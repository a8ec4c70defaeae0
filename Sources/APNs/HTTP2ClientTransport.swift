import COpenSSL
import Foundation
import Runtime

#if canImport(Glibc)
    import Glibc
#endif

/// HTTP/2 over TLS with nghttp2 and OpenSSL, driven by one thread this object owns (a `poll` loop), so
/// that no blocking call ever runs on Swift's cooperative pool.
///
/// One multiplexed connection per `host:port` (`HTTP2ClientConnection`): requests become streams on it,
/// up to the server's `SETTINGS_MAX_CONCURRENT_STREAMS` and the configured limit; the rest wait on the
/// same connection. A connection that sends GOAWAY or breaks takes no new streams; what it had not sent
/// (and what the server refused unprocessed) goes on a new one. Every exchange has a deadline that
/// counts from its submission, connecting included.
///
/// Each pass of the loop submits every exchange that arrived and writes all of nghttp2's frames at once,
/// then reads every answer the socket holds: a busy worker's pushes cost a few TLS records per batch,
/// not a write and a read each. A new connection's host is resolved on a thread of its own (`HTTP2Resolver`),
/// so a slow DNS server holds back that connection only, never the loop.
final class HTTP2ClientTransport: @unchecked Sendable {
    // Thread-safety: `inbox` is guarded by its lock; `connections`, `retiring` and `resolving` are touched
    // only by the loop thread. The TLS context is immutable after init (`SSL_new` may read it from any thread).
    private let settings: Settings
    private let tls: OpaquePointer
    private let wakeRead: Int32
    private let wakeWrite: Int32
    private let inbox = Lock(Inbox())
    /// The connection taking new streams, per `host:port`.
    private var connections: [String: HTTP2ClientConnection] = [:]
    /// Connections that take no new streams and finish the ones they have.
    private var retiring: [HTTP2ClientConnection] = []
    /// Connections whose host is being resolved, by the number their resolution comes back with.
    private var resolving: [Int: HTTP2ClientConnection] = [:]
    private var resolutions = 0

    struct Settings: Sendable {
        var connectTimeoutMilliseconds: Int
        var keepAliveSeconds: Int
        var maximumIdleSeconds: Int
        var maximumConcurrentStreams: Int
        var trustedCertificates: APNsTrustedCertificates?
        /// How hosts become addresses (off the loop thread).
        var resolver = HTTP2Resolver.system
    }

    private struct Inbox {
        var pending: [HTTP2ClientStream] = []
        /// Resolutions finished, for the loop to hand to their connections.
        var resolved: [(number: Int, resolution: Result<[HTTP2Resolver.Address], HTTP2Exchange.Failure>)] = []
        var threadStarted = false
        var stopping = false
        var stopped = false
        var stopWaiters: [CheckedContinuation<Void, Never>] = []
        /// The loop thread is (about to be) blocked in `poll`: submitters must wake it.
        var polling = false
        /// A wake-up was already sent for this poll: one is enough (each costs a syscall).
        var wakeSent = false
    }

    private static let ignoreBrokenPipes: Void = { signal(SIGPIPE, SIG_IGN) }()

    init(settings: Settings) {
        _ = Self.ignoreBrokenPipes
        self.settings = settings
        guard let pipe = WakePipe.make() else { fatalError("cannot create the APNs transport's wake-up pipe") }
        (wakeRead, wakeWrite) = pipe
        tls = Self.makeTLSContext(trusting: settings.trustedCertificates)
    }

    /// The client's TLS context (freed by the caller): TLS 1.2 or later, the peer's certificate checked against
    /// the system's store and `extra`, ALPN `h2`, partial writes from a buffer that may move.
    static func makeTLSContext(trusting extra: APNsTrustedCertificates?) -> OpaquePointer {
        guard let context = SSL_CTX_new(TLS_client_method()) else { fatalError("SSL_CTX_new failed: out of memory") }
        _ = copenssl_ctx_set_min_proto_version(context, TLS1_2_VERSION)
        _ = SSL_CTX_set_default_verify_paths(context)
        extra?.install(into: context)
        SSL_CTX_set_verify(context, SSL_VERIFY_PEER, nil)
        let alpn: [UInt8] = [2, UInt8(ascii: "h"), UInt8(ascii: "2")]
        _ = SSL_CTX_set_alpn_protos(context, alpn, UInt32(alpn.count))
        _ = SSL_CTX_ctrl(
            context, SSL_CTRL_MODE, Int(SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER), nil)
        ERR_clear_error()
        return context
    }

    /// The loop thread has ended (or never started) before the last reference goes.
    deinit {
        SSL_CTX_free(tls)
        close(wakeRead)
        close(wakeWrite)
    }

    /// Performs one exchange (a batch of one); returns when it is answered, fails or passes its deadline.
    func perform(_ exchange: HTTP2Exchange) async -> HTTP2Exchange.Outcome {
        await perform(all: [exchange])[0].outcome
    }

    /// Performs several exchanges, handed to the loop together; returns when every one has ended, with
    /// each outcome (in order) and when it came.
    func perform(all exchanges: [HTTP2Exchange]) async -> HTTP2ExchangeBatch.Results {
        guard !exchanges.isEmpty else { return [] }
        return await withCheckedContinuation { (continuation: CheckedContinuation<HTTP2ExchangeBatch.Results, Never>) in
            let batch = HTTP2ExchangeBatch(count: exchanges.count, continuation: continuation)
            let now = HTTP2ClientStream.monotonicNanoseconds()
            var streams: [HTTP2ClientStream] = []
            streams.reserveCapacity(exchanges.count)
            for (index, exchange) in exchanges.enumerated() {
                guard let target = HTTP2Target(url: exchange.url) else {
                    batch.finish(index, .failed(Self.badURL(exchange.url)))
                    continue
                }
                streams.append(HTTP2ClientStream(exchange: exchange, target: target, now: now, batch: batch, index: index))
            }
            if !streams.isEmpty { hand(streams) }
        }
    }

    private static func badURL(_ url: String) -> HTTP2Exchange.Failure {
        .init(kind: .connectFailed, message: "not an https:// URL with a host: \(url)")
    }

    /// Gives streams to the loop thread (starting it on first use, waking it if it sleeps); fails them at
    /// once after `shutdown`.
    private func hand(_ streams: [HTTP2ClientStream]) {
        let (accepted, startThread, wake) = inbox.withLock { box -> (Bool, Bool, Bool) in
            guard !box.stopping else { return (false, false, false) }
            box.pending.append(contentsOf: streams)
            let start = !box.threadStarted
            box.threadStarted = true
            let wake = box.polling && !box.wakeSent
            if wake { box.wakeSent = true }
            return (true, start, wake)
        }
        guard accepted else {
            for stream in streams { stream.fail(.connectFailed, "APNs client is shut down") }
            return
        }
        if startThread {
            let thread = Thread { [self] in runLoop() }
            thread.name = "apns-http2"
            thread.start()
        } else if wake {
            WakePipe.wake(wakeWrite)
        }
    }

    /// Stops the loop: exchanges in flight fail as connection losses. Returns once the thread ended.
    func shutdown() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let (done, wake) = inbox.withLock { box -> (Bool, Bool) in
                box.stopping = true
                if box.stopped || !box.threadStarted { return (true, false) }
                box.stopWaiters.append(continuation)
                return (false, true)  // always wake: a stop must not wait for the poll timeout
            }
            if wake { WakePipe.wake(wakeWrite) }
            if done { continuation.resume() }
        }
    }

    // MARK: - The loop thread

    private func runLoop() {
        var descriptors: [pollfd] = []
        var polled: [HTTP2ClientConnection] = []
        while true {
            let (incoming, resolved, stopping) = inbox.withLock { box in
                defer {
                    box.pending = []
                    box.resolved = []
                }
                return (box.pending, box.resolved, box.stopping)
            }
            if stopping { break }
            let now = HTTP2ClientStream.monotonicNanoseconds()
            for (number, resolution) in resolved { resolving.removeValue(forKey: number)?.resolved(resolution) }
            for stream in incoming { route(stream, now: now) }
            var wakeAt = UInt64.max
            for connection in everyConnection() {
                connection.service(now: now)
                wakeAt = min(wakeAt, connection.expire(now: now))
            }
            reroute(now: now)
            reap()

            // Sleep only if nothing was submitted (or resolved) meanwhile; from here on submitters wake us.
            let mayPoll = inbox.withLock { box -> Bool in
                guard box.pending.isEmpty, box.resolved.isEmpty, !box.stopping else { return false }
                box.polling = true
                return true
            }
            guard mayPoll else { continue }
            descriptors.removeAll(keepingCapacity: true)
            polled.removeAll(keepingCapacity: true)
            descriptors.append(pollfd(fd: wakeRead, events: Int16(POLLIN), revents: 0))
            for connection in everyConnection() {
                guard let (fd, events) = connection.pollEvents else { continue }
                descriptors.append(pollfd(fd: fd, events: events, revents: 0))
                polled.append(connection)
            }
            let timeout: Int32
            if wakeAt == .max {
                timeout = 1000
            } else {
                let now = HTTP2ClientStream.monotonicNanoseconds()
                timeout = wakeAt <= now ? 0 : Int32(min(1000, (wakeAt - now + 999_999) / 1_000_000))
            }
            _ = poll(&descriptors, nfds_t(descriptors.count), timeout)
            inbox.withLock { box in
                box.polling = false
                box.wakeSent = false
            }
            if descriptors[0].revents != 0 { WakePipe.drain(wakeRead) }
            for (index, connection) in polled.enumerated() where descriptors[index + 1].revents != 0 {
                connection.handle(revents: descriptors[index + 1].revents)
            }
        }
        for connection in everyConnection() { connection.abandon("APNs client is shut down") }
        connections = [:]
        retiring = []
        let waiters = inbox.withLock { box -> [CheckedContinuation<Void, Never>] in
            box.stopped = true
            for stream in box.pending { stream.fail(.connectFailed, "APNs client is shut down") }
            box.pending = []
            defer { box.stopWaiters = [] }
            return box.stopWaiters
        }
        for waiter in waiters { waiter.resume() }
    }

    private func everyConnection() -> [HTTP2ClientConnection] {
        retiring.isEmpty ? Array(connections.values) : Array(connections.values) + retiring
    }

    /// Puts an exchange on its host's connection, opening one when there is none that takes streams.
    private func route(_ stream: HTTP2ClientStream, now: UInt64) {
        let key = stream.target.authority
        if let connection = connections[key], connection.acceptsStreams {
            connection.enqueue(stream)
            return
        }
        // The old one is kept until reaped: it may still have streams on the wire, or, closed, streams it never
        // sent that the next `reroute` must still find.
        if let old = connections[key] { retiring.append(old) }
        let connection = HTTP2ClientConnection(target: stream.target, settings: settings, tls: tls, now: now)
        connections[key] = connection
        connection.enqueue(stream)
        resolve(connection)
    }

    /// Resolves a new connection's host on a thread of its own (one per resolution: they are rare, and one slow
    /// name must not hold back another's); the loop hands the addresses to it (unless it gave up meanwhile).
    private func resolve(_ connection: HTTP2ClientConnection) {
        resolutions += 1
        let number = resolutions
        resolving[number] = connection
        let (host, port, resolver) = (connection.target.host, connection.target.port, settings.resolver)
        let thread = Thread { [self] in
            let resolution = resolver.resolve(host, port)
            let wake = inbox.withLock { box -> Bool in
                guard !box.stopped else { return false }
                box.resolved.append((number, resolution))
                let wake = box.polling && !box.wakeSent
                if wake { box.wakeSent = true }
                return wake
            }
            if wake { WakePipe.wake(wakeWrite) }
        }
        thread.name = "apns-resolve"
        thread.start()
    }

    /// Sends what went-away or broken connections had not sent on a connection that takes streams.
    private func reroute(now: UInt64) {
        for connection in everyConnection() where !connection.refused.isEmpty {
            let streams = connection.refused
            connection.refused = []
            for stream in streams where !stream.finished { route(stream, now: now) }
        }
    }

    private func reap() {
        if !resolving.isEmpty { resolving = resolving.filter { $0.value.phase == .resolving } }
        retiring.removeAll { $0.phase == .closed && $0.refused.isEmpty }
        for (key, connection) in connections where connection.phase == .closed && connection.refused.isEmpty {
            connections.removeValue(forKey: key)
        }
    }
}
