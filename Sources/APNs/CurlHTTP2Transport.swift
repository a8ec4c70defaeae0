import CCurl
import Foundation
import Synchronization

/// HTTP/2 over TLS on a curl multi handle, driven by one thread this object owns, so that no blocking
/// call ever runs on Swift's cooperative pool.
///
/// One multiplexed connection per host (`CURLMOPT_MAX_HOST_CONNECTIONS` 1, `CURLPIPE_MULTIPLEX`,
/// `CURLOPT_PIPEWAIT`): requests become streams on it, up to the server's
/// `SETTINGS_MAX_CONCURRENT_STREAMS` (curl queues the rest). A connection that sends GOAWAY or breaks
/// is not reused; the next request opens a new one. Every exchange has a deadline
/// (`CURLOPT_TIMEOUT_MS`).
final class CurlHTTP2Transport: @unchecked Sendable {
    // Thread-safety: `inbox` is guarded by its Mutex. `multi`, `active` and `idle` are touched only by the
    // loop thread, except `curl_multi_wakeup`, which libcurl documents as callable from any thread;
    // the multi handle is freed in deinit, when no thread can hold a reference any more.
    private let multi: UnsafeMutableRawPointer
    private var active: [UnsafeMutableRawPointer: CurlTransfer] = [:]
    /// Easy handles of answered exchanges, kept for the next ones (at most `idleHandleLimit`), reset as they
    /// come back: an idle handle points at nothing of the exchange it served (its buffers, headers, callbacks).
    private var idle: [UnsafeMutableRawPointer] = []
    private static let idleHandleLimit = 512
    private let inbox = Mutex(Inbox())
    private let settings: Settings

    struct Settings: Sendable {
        var connectTimeoutMilliseconds: Int
        var keepAliveSeconds: Int
        var maximumIdleSeconds: Int
        var maximumConcurrentStreams: Int
        var trustedCertificates: APNsTrustedCertificates?
    }

    private struct Inbox {
        var pending: [CurlTransfer] = []
        var threadStarted = false
        var stopping = false
        var stopped = false
        var stopWaiters: [CheckedContinuation<Void, Never>] = []
        /// The loop thread is (about to be) blocked in `curl_multi_poll`: submitters must wake it.
        var polling = false
        /// A wake-up was already sent for this poll: one is enough (each costs a syscall).
        var wakeSent = false
    }

    private static let globalInit: Void = { curl_global_init(Int(CURL_GLOBAL_DEFAULT)) }()

    init(settings: Settings) {
        _ = Self.globalInit
        self.settings = settings
        guard let handle = curl_multi_init() else { fatalError("curl_multi_init failed: out of memory") }
        multi = handle
        _ = ccurl_multi_setopt_long(multi, CURLMOPT_PIPELINING, CURLPIPE_MULTIPLEX)
        _ = ccurl_multi_setopt_long(multi, CURLMOPT_MAX_HOST_CONNECTIONS, 1)
        _ = ccurl_multi_setopt_long(multi, CURLMOPT_MAX_CONCURRENT_STREAMS, settings.maximumConcurrentStreams)
    }

    deinit {
        for easy in idle { curl_easy_cleanup(easy) }
        curl_multi_cleanup(multi)
    }

    /// Performs one exchange; returns when it is answered, fails or passes its deadline.
    func perform(_ exchange: HTTP2Exchange) async -> HTTP2Exchange.Outcome {
        await withCheckedContinuation { (continuation: CheckedContinuation<HTTP2Exchange.Outcome, Never>) in
            let transfer = CurlTransfer(exchange: exchange, continuation: continuation)
            let (accepted, startThread, wake) = inbox.withLock { box -> (Bool, Bool, Bool) in
                guard !box.stopping else { return (false, false, false) }
                box.pending.append(transfer)
                let start = !box.threadStarted
                box.threadStarted = true
                let wake = box.polling && !box.wakeSent
                if wake { box.wakeSent = true }
                return (true, start, wake)
            }
            guard accepted else {
                continuation.resume(returning: .failed(code: -1, message: "APNs client is shut down"))
                return
            }
            if startThread {
                let thread = Thread { [self] in runLoop() }
                thread.name = "apns-http2"
                thread.start()
            } else if wake {
                curl_multi_wakeup(multi)
            }
        }
    }

    /// Stops the loop: exchanges in flight fail as connection errors. Returns once the thread ended.
    func shutdown() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let (done, wake) = inbox.withLock { box -> (Bool, Bool) in
                box.stopping = true
                if box.stopped || !box.threadStarted { return (true, false) }
                box.stopWaiters.append(continuation)
                return (false, true)  // always wake: a stop must not wait for the poll timeout
            }
            if wake { curl_multi_wakeup(multi) }
            if done { continuation.resume() }
        }
    }

    // MARK: - The loop thread

    private func runLoop() {
        while true {
            let (incoming, stopping) = inbox.withLock { box -> ([CurlTransfer], Bool) in
                defer { box.pending = [] }
                return (box.pending, box.stopping)
            }
            for transfer in incoming { start(transfer) }
            if stopping { break }
            var running: Int32 = 0
            _ = curl_multi_perform(multi, &running)
            collectFinished()
            // Sleep only if nothing was submitted meanwhile; from here on submitters wake us.
            let mayPoll = inbox.withLock { box -> Bool in
                guard box.pending.isEmpty, !box.stopping else { return false }
                box.polling = true
                return true
            }
            if mayPoll {
                var ready: Int32 = 0
                _ = curl_multi_poll(multi, nil, 0, 1000, &ready)
                inbox.withLock { box in
                    box.polling = false
                    box.wakeSent = false
                }
            }
        }
        for (easy, transfer) in active {
            curl_multi_remove_handle(multi, easy)
            transfer.finish(.failed(code: -1, message: "APNs client is shut down"))
        }
        active = [:]
        let waiters = inbox.withLock { box -> [CheckedContinuation<Void, Never>] in
            box.stopped = true
            for transfer in box.pending { transfer.finish(.failed(code: -1, message: "APNs client is shut down")) }
            box.pending = []
            defer { box.stopWaiters = [] }
            return box.stopWaiters
        }
        for waiter in waiters { waiter.resume() }
    }

    private func start(_ transfer: CurlTransfer) {
        guard let easy = transfer.makeEasyHandle(settings: settings, reusing: idle.popLast()) else {
            transfer.finish(.failed(code: -1, message: "curl_easy_init failed"))
            return
        }
        let added = curl_multi_add_handle(multi, easy)
        guard added == CURLM_OK else {
            transfer.finish(.failed(code: -1, message: "curl_multi_add_handle: \(String(cString: curl_multi_strerror(added)))"))
            return
        }
        active[easy] = transfer
    }

    private func collectFinished() {
        var left: Int32 = 0
        while let message = curl_multi_info_read(multi, &left) {
            guard message.pointee.msg == CURLMSG_DONE, let easy = message.pointee.easy_handle else { continue }
            let result = ccurl_msg_result(message)
            curl_multi_remove_handle(multi, easy)
            guard let transfer = active.removeValue(forKey: easy) else { continue }
            guard let done = transfer.complete(result: result) else { continue }
            if idle.count < Self.idleHandleLimit {
                curl_easy_reset(done)
                idle.append(done)
            } else {
                curl_easy_cleanup(done)
            }
        }
    }
}
