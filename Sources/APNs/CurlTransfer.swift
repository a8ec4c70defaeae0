import CCurl
import COpenSSL
import Foundation

/// One exchange's curl easy handle and buffers. Created by the submitting task, then owned by the
/// transport's loop thread until `finish`, which frees the handle and resumes the waiting task, or
/// `complete`, which hands an answered exchange's handle back to the transport for the next one.
final class CurlTransfer: @unchecked Sendable {
    // Thread-safety: handed over once through the transport's Mutex-guarded inbox; after that only
    // the loop thread touches it (curl callbacks run on that thread too).
    private let exchange: HTTP2Exchange
    private var continuation: CheckedContinuation<HTTP2Exchange.Outcome, Never>?
    private var easy: UnsafeMutableRawPointer?
    private var headerList: UnsafeMutablePointer<curl_slist>?
    private let errorBuffer = UnsafeMutablePointer<CChar>.allocate(capacity: Int(CURL_ERROR_SIZE) + 1)
    private var responseHeaders: [String: String] = [:]
    private var responseBody: [UInt8] = []

    init(exchange: HTTP2Exchange, continuation: CheckedContinuation<HTTP2Exchange.Outcome, Never>) {
        self.exchange = exchange
        self.continuation = continuation
        errorBuffer.initialize(repeating: 0, count: Int(CURL_ERROR_SIZE) + 1)
    }

    deinit { errorBuffer.deallocate() }

    /// `name:` as bytes for each header kept from an answer.
    private static let keptHeaderPrefixes: [[UInt8]] = HTTP2Exchange.keptHeaders.map { Array(($0 + ":").utf8) }

    /// Sets up the easy handle for this exchange: `reusing` one an answered exchange left (already reset to
    /// curl's defaults: a fresh handle costs curl a dozen allocations and its buffers), or a new one; `nil`
    /// when curl is out of memory.
    func makeEasyHandle(settings: CurlHTTP2Transport.Settings, reusing idle: UnsafeMutableRawPointer?)
        -> UnsafeMutableRawPointer?
    {
        guard let handle = idle ?? curl_easy_init() else { return nil }
        easy = handle
        let me = Unmanaged.passUnretained(self).toOpaque()
        exchange.url.withCString { _ = ccurl_easy_setopt_ptr(handle, CURLOPT_URL, $0) }
        _ = ccurl_easy_setopt_long(handle, CURLOPT_HTTP_VERSION, CURL_HTTP_VERSION_2TLS)
        _ = ccurl_easy_setopt_long(handle, CURLOPT_PIPEWAIT, 1)
        _ = ccurl_easy_setopt_long(handle, CURLOPT_NOSIGNAL, 1)
        _ = ccurl_easy_setopt_long(handle, CURLOPT_TCP_KEEPALIVE, 1)
        _ = ccurl_easy_setopt_long(handle, CURLOPT_TCP_KEEPIDLE, settings.keepAliveSeconds)
        _ = ccurl_easy_setopt_long(handle, CURLOPT_TCP_KEEPINTVL, max(1, settings.keepAliveSeconds / 2))
        _ = ccurl_easy_setopt_long(handle, CURLOPT_MAXAGE_CONN, settings.maximumIdleSeconds)
        _ = ccurl_easy_setopt_long(handle, CURLOPT_TIMEOUT_MS, max(1, exchange.timeoutMilliseconds))
        _ = ccurl_easy_setopt_long(handle, CURLOPT_CONNECTTIMEOUT_MS, max(1, settings.connectTimeoutMilliseconds))
        _ = ccurl_easy_setopt_ptr(handle, CURLOPT_ERRORBUFFER, errorBuffer)
        _ = ccurl_easy_setopt_ptr(handle, CURLOPT_PRIVATE, me)

        // Exactly the contract's headers: drop the ones curl adds on its own.
        var list: UnsafeMutablePointer<curl_slist>? = nil
        for line in exchange.headers + ["Content-Type:", "Accept:", "Expect:"] {
            list = curl_slist_append(list, line)
        }
        headerList = list
        _ = ccurl_easy_setopt_ptr(handle, CURLOPT_HTTPHEADER, list)

        switch exchange.method {
        case .post:
            _ = ccurl_easy_setopt_off(handle, CURLOPT_POSTFIELDSIZE_LARGE, curl_off_t(exchange.body.count))
            if exchange.body.isEmpty {
                _ = ccurl_easy_setopt_long(handle, CURLOPT_POST, 1)
            } else {
                exchange.body.withUnsafeBytes { _ = ccurl_easy_setopt_ptr(handle, CURLOPT_COPYPOSTFIELDS, $0.baseAddress) }
            }
        case .get:
            _ = ccurl_easy_setopt_long(handle, CURLOPT_HTTPGET, 1)
        case .delete:
            "DELETE".withCString { _ = ccurl_easy_setopt_ptr(handle, CURLOPT_CUSTOMREQUEST, $0) }
        }

        _ = ccurl_easy_setopt_write(handle, CURLOPT_WRITEFUNCTION) { data, size, count, context in
            guard let data, let context else { return 0 }
            let transfer = Unmanaged<CurlTransfer>.fromOpaque(context).takeUnretainedValue()
            let length = size * count
            data.withMemoryRebound(to: UInt8.self, capacity: length) {
                transfer.responseBody.append(contentsOf: UnsafeBufferPointer(start: $0, count: length))
            }
            return length
        }
        _ = ccurl_easy_setopt_ptr(handle, CURLOPT_WRITEDATA, me)
        _ = ccurl_easy_setopt_write(handle, CURLOPT_HEADERFUNCTION) { data, size, count, context in
            guard let data, let context else { return 0 }
            let transfer = Unmanaged<CurlTransfer>.fromOpaque(context).takeUnretainedValue()
            let length = size * count
            // Only a few headers are read from the answer (apns-id, and a channel's id); compare bytes,
            // no String work for the others.
            data.withMemoryRebound(to: UInt8.self, capacity: length) { bytes in
                for name in CurlTransfer.keptHeaderPrefixes where length > name.count {
                    var matches = true
                    for i in 0..<name.count where bytes[i] | 0x20 != name[i] | 0x20 {
                        matches = false
                        break
                    }
                    guard matches else { continue }
                    var value = Array(UnsafeBufferPointer(start: bytes + name.count, count: length - name.count))
                    while let first = value.first, first == 32 || first == 9 { value.removeFirst() }
                    while let last = value.last, last == 10 || last == 13 || last == 32 { value.removeLast() }
                    let key = String(decoding: name.dropLast(), as: UTF8.self)
                    transfer.responseHeaders[key] = String(decoding: value, as: UTF8.self)
                    return
                }
            }
            return length
        }
        _ = ccurl_easy_setopt_ptr(handle, CURLOPT_HEADERDATA, me)

        if let certificates = settings.trustedCertificates {
            _ = ccurl_easy_setopt_ssl_ctx_function(handle) { _, sslContext, context in
                guard let sslContext, let context else { return CURLE_OK }
                Unmanaged<APNsTrustedCertificates>.fromOpaque(context).takeUnretainedValue().install(into: sslContext)
                return CURLE_OK
            }
            // The transport's settings keep the certificates alive for the handle's lifetime.
            _ = ccurl_easy_setopt_ptr(handle, CURLOPT_SSL_CTX_DATA, Unmanaged.passUnretained(certificates).toOpaque())
        }
        return handle
    }

    /// Called on the loop thread when curl reports the transfer done (already removed from the multi).
    /// Returns the easy handle of an answered exchange, for the transport to reuse or free; a failed
    /// one's handle is freed here.
    func complete(result: CURLcode) -> UnsafeMutableRawPointer? {
        guard let easy else { return nil }
        guard result == CURLE_OK else {
            var message = String(cString: errorBuffer)
            if message.isEmpty { message = String(cString: curl_easy_strerror(result)) }
            finish(.failed(code: Int(result.rawValue), message: message))
            return nil
        }
        var status = 0
        _ = ccurl_easy_getinfo_long(easy, CURLINFO_RESPONSE_CODE, &status)
        self.easy = nil
        finish(.response(status: status, headers: responseHeaders, body: responseBody))
        return easy
    }

    /// Frees curl resources (the easy handle unless `complete` took it back) and resumes the waiting
    /// task (once).
    func finish(_ outcome: HTTP2Exchange.Outcome) {
        if let easy { curl_easy_cleanup(easy) }
        easy = nil
        if let headerList { curl_slist_free_all(headerList) }
        headerList = nil
        continuation?.resume(returning: outcome)
        continuation = nil
    }
}
