import CCurl
import Foundation
import Runtime
import Synchronization

/// POSTs over libcurl's multi interface on a thread of its own: callers await their answer and never block
/// (Swift's cooperative pool keeps running), while up to `maximumConnections` keep-alive connections to the
/// receiver carry many POSTs at once. Each POST has its own timeout; redirects are not followed; only http
/// and https are spoken.
public final class CurlWebhookTransport: WebhookTransport, @unchecked Sendable {
    // @unchecked: `queue` is behind its lock; `multi`, `transfers` and `idle` are touched only on the
    // transport's own thread (`loop`), and `multi` otherwise only by `curl_multi_wakeup` (thread-safe), called
    // under `queue`'s lock while `closed` is false, which keeps the loop from having freed it.
    private struct Queued: @unchecked Sendable {
        let request: WebhookRequest
        let continuation: CheckedContinuation<WebhookResponse, Never>
    }
    private struct Transfer {
        let continuation: CheckedContinuation<WebhookResponse, Never>
        let headers: UnsafeMutablePointer<curl_slist>?
    }
    private struct Queue {
        var waiting: [Queued] = []
        var closed = false
    }

    private static let globalInit: Bool = curl_global_init(Int(CURL_GLOBAL_DEFAULT)) == CURLE_OK

    private let queue = Lock(Queue())
    private let multi: UnsafeMutableRawPointer
    private var transfers: [UnsafeMutableRawPointer: Transfer] = [:]
    private var idle: [UnsafeMutableRawPointer] = []
    private let finished = Lock<[CheckedContinuation<Void, Never>]>([])
    private let done = Atomic<Bool>(false)

    /// - Parameter maximumConnections: connections to one host at most; more POSTs wait for one.
    public init(maximumConnections: Int = 64) {
        _ = Self.globalInit
        multi = curl_multi_init()!
        _ = ccurl_multi_setopt_long(multi, CURLMOPT_MAX_HOST_CONNECTIONS, max(1, maximumConnections))
        _ = ccurl_multi_setopt_long(multi, CURLMOPT_MAXCONNECTS, max(1, maximumConnections))
        let thread = Thread { [self] in loop() }
        thread.name = "webhook-curl"
        thread.start()
    }

    public func post(_ request: WebhookRequest) async -> WebhookResponse {
        await withCheckedContinuation { continuation in
            // The wake-up is sent under the queue's lock: the loop frees `multi` only after it saw `closed` there.
            let accepted = queue.withLock { q -> Bool in
                guard !q.closed else { return false }
                q.waiting.append(Queued(request: request, continuation: continuation))
                curl_multi_wakeup(multi)
                return true
            }
            if !accepted { continuation.resume(returning: .failed("webhook transport closed")) }
        }
    }

    /// Takes no more POSTs, lets those on the wire finish (each within its timeout), then frees the handles.
    public func close() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let ended = finished.withLock { waiters -> Bool in
                if done.load(ordering: .acquiring) { return true }
                waiters.append(continuation)
                return false
            }
            if ended {
                continuation.resume()
                return
            }
            queue.withLock { q in
                guard !q.closed else { return }
                q.closed = true
                curl_multi_wakeup(multi)
            }
        }
    }

    private func loop() {
        while true {
            let (taken, closed) = queue.withLock { q in
                defer { q.waiting = [] }
                return (q.waiting, q.closed)
            }
            for queued in taken { start(queued) }
            var running: Int32 = 0
            _ = curl_multi_perform(multi, &running)
            collect()
            if closed && transfers.isEmpty { break }
            var timeout = -1
            _ = curl_multi_timeout(multi, &timeout)
            let wait = Int32(timeout < 0 ? 1000 : min(timeout, 1000))
            _ = curl_multi_poll(multi, nil, 0, wait, nil)
        }
        for handle in idle { curl_easy_cleanup(handle) }
        idle = []
        curl_multi_cleanup(multi)
        let waiters = finished.withLock { waiters -> [CheckedContinuation<Void, Never>] in
            done.store(true, ordering: .releasing)
            defer { waiters = [] }
            return waiters
        }
        for waiter in waiters { waiter.resume() }
    }

    private func start(_ queued: Queued) {
        let request = queued.request
        guard let easy = idle.popLast() ?? curl_easy_init() else {
            queued.continuation.resume(returning: .failed("curl_easy_init failed"))
            return
        }
        curl_easy_reset(easy)
        var headers: UnsafeMutablePointer<curl_slist>? = nil
        for line in ["Content-Type: application/json", "Expect:"] + request.headers.map({ "\($0.name): \($0.value)" }) {
            headers = curl_slist_append(headers, line)
        }
        _ = ccurl_setopt_string(easy, CURLOPT_URL, request.url)
        _ = ccurl_setopt_string(easy, CURLOPT_PROTOCOLS_STR, "http,https")
        _ = ccurl_setopt_long(easy, CURLOPT_NOSIGNAL, 1)
        _ = ccurl_setopt_long(easy, CURLOPT_POST, 1)
        _ = ccurl_setopt_long(easy, CURLOPT_TIMEOUT_MS, max(1, Int(request.timeoutSeconds * 1000)))
        _ = ccurl_setopt_long(easy, CURLOPT_POSTFIELDSIZE, request.body.count)
        request.body.withUnsafeBytes { bytes in
            // Copied by libcurl: the request's array need not outlive this call.
            _ = ccurl_setopt_pointer(easy, CURLOPT_COPYPOSTFIELDS, UnsafeMutableRawPointer(mutating: bytes.baseAddress))
        }
        _ = ccurl_setopt_pointer(easy, CURLOPT_HTTPHEADER, UnsafeMutableRawPointer(headers))
        _ = ccurl_discard_body(easy)
        transfers[easy] = Transfer(continuation: queued.continuation, headers: headers)
        if curl_multi_add_handle(multi, easy) != CURLM_OK {
            finish(easy, response: .failed("curl_multi_add_handle failed"))
        }
    }

    private func collect() {
        var left: Int32 = 0
        while let message = curl_multi_info_read(multi, &left) {
            guard message.pointee.msg == CURLMSG_DONE, let easy = message.pointee.easy_handle else { continue }
            let result = message.pointee.data.result
            let response: WebhookResponse
            if result == CURLE_OK {
                var status = 0
                _ = ccurl_getinfo_long(easy, CURLINFO_RESPONSE_CODE, &status)
                response = .status(status)
            } else {
                response = .failed(String(cString: curl_easy_strerror(result)))
            }
            _ = curl_multi_remove_handle(multi, easy)
            finish(easy, response: response)
        }
    }

    private func finish(_ easy: UnsafeMutableRawPointer, response: WebhookResponse) {
        guard let transfer = transfers.removeValue(forKey: easy) else { return }
        curl_slist_free_all(transfer.headers)
        idle.append(easy)
        transfer.continuation.resume(returning: response)
    }
}
