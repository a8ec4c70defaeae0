import CNGHTTP2
import Dispatch
import Runtime

/// Where an exchange goes: parsed once from its URL (`https://host[:port]/path`).
struct HTTP2Target: Sendable, Equatable {
    /// `host:port` as the URL wrote it (the `:authority` pseudo-header, and the connection's key).
    var authority: String
    var host: String
    var port: Int
    /// Path and query.
    var path: String

    /// Nil when the URL is not `https://` with a host.
    init?(url: String) {
        let scheme = "https://"
        guard url.hasPrefix(scheme) else { return nil }
        let rest = url.dropFirst(scheme.count)
        let slash = rest.firstIndex(of: "/") ?? rest.endIndex
        let authority = rest[..<slash]
        path = slash == rest.endIndex ? "/" : String(rest[slash...])
        var host = authority
        port = 443
        if authority.hasPrefix("[") {  // [IPv6]:port
            guard let close = authority.firstIndex(of: "]") else { return nil }
            host = authority[authority.index(after: authority.startIndex)..<close]
            let after = authority[authority.index(after: close)...]
            if after.hasPrefix(":") {
                guard let number = Int(after.dropFirst()) else { return nil }
                port = number
            }
        } else if let colon = authority.lastIndex(of: ":") {
            guard let number = Int(authority[authority.index(after: colon)...]) else { return nil }
            host = authority[..<colon]
            port = number
        }
        guard !host.isEmpty, (1...65535).contains(port) else { return nil }
        self.host = String(host)
        self.authority = String(authority)
    }

    /// True when the host is an IP address (no SNI then; the certificate must name the address).
    var hostIsAddress: Bool { host.contains(":") || host.allSatisfy { $0.isNumber || $0 == "." } }
}

/// One exchange in the transport: created by the submitting task, then owned by the loop thread until
/// `finish` hands its outcome to its batch (once).
final class HTTP2ClientStream: @unchecked Sendable {
    // Thread-safety: handed over once through the transport's lock-guarded inbox; after that only the
    // loop thread touches it (nghttp2's callbacks run on that thread too).
    let exchange: HTTP2Exchange
    let target: HTTP2Target
    /// Monotonic nanoseconds after which the exchange fails as timed out.
    let deadline: UInt64
    /// The batch waiting for the outcome (nil once finished), and this exchange's place in it.
    private var batch: HTTP2ExchangeBatch?
    private let index: Int

    var status = 0
    /// The answer ended (END_STREAM seen on its HEADERS or DATA).
    var ended = false
    var headers: [String: String] = [:]
    var body: [UInt8] = []
    /// Bytes of the request body handed to nghttp2 so far.
    var sent = 0

    /// The most of an answer's body kept (APNs's error bodies are a few dozen bytes).
    static let bodyLimit = 64 * 1024

    init(exchange: HTTP2Exchange, target: HTTP2Target, now: UInt64, batch: HTTP2ExchangeBatch, index: Int) {
        self.exchange = exchange
        self.target = target
        self.deadline = now + UInt64(max(1, exchange.timeoutMilliseconds)) * 1_000_000
        self.batch = batch
        self.index = index
    }

    var finished: Bool { batch == nil }

    func finish(_ outcome: HTTP2Exchange.Outcome) {
        batch?.finish(index, outcome)
        batch = nil
    }

    func fail(_ kind: HTTP2Exchange.Failure.Kind, _ message: String) {
        finish(.failed(.init(kind: kind, message: message)))
    }

    /// Forgets what one attempt on a connection sent and received, for the exchange to go again on another.
    func rewind() {
        sent = 0
        status = 0
        ended = false
        headers = [:]
        body = []
    }

    /// Finishes with the answer received.
    func answer() { finish(.response(status: status, headers: headers, body: body)) }

    /// Lends nghttp2 the request's header block: pseudo-headers first, then the exchange's lines with
    /// lower-case names (nghttp2 copies them during the call).
    func withHeaderBlock<R>(_ body: (UnsafeBufferPointer<nghttp2_nv>) -> R) -> R {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(512 + exchange.body.count / 8)
        var fields: [(name: Range<Int>, value: Range<Int>)] = []
        fields.reserveCapacity(exchange.headers.count + 5)
        func add(_ name: Substring.UTF8View, _ value: Substring.UTF8View) {
            let nameStart = bytes.count
            for byte in name { bytes.append(byte >= 65 && byte <= 90 ? byte | 0x20 : byte) }
            let valueStart = bytes.count
            bytes.append(contentsOf: value)
            fields.append((nameStart..<valueStart, valueStart..<bytes.count))
        }
        func add(_ name: String, _ value: String) { add(Substring(name).utf8, Substring(value).utf8) }
        add(":method", exchange.method.rawValue)
        add(":scheme", "https")
        add(":authority", target.authority)
        add(":path", target.path)
        for line in exchange.headers {
            let utf8 = Substring(line).utf8
            guard let colon = utf8.firstIndex(of: UInt8(ascii: ":")) else { continue }
            var valueStart = utf8.index(after: colon)
            while valueStart < utf8.endIndex, utf8[valueStart] == 32 || utf8[valueStart] == 9 {
                valueStart = utf8.index(after: valueStart)
            }
            add(utf8[..<colon], utf8[valueStart...])
        }
        if !exchange.body.isEmpty { add("content-length", String(exchange.body.count)) }
        return bytes.withUnsafeMutableBufferPointer { storage in
            let base = storage.baseAddress!
            let nva = fields.map { field in
                nghttp2_nv(
                    name: base + field.name.lowerBound, value: base + field.value.lowerBound,
                    namelen: field.name.count, valuelen: field.value.count,
                    flags: UInt8(NGHTTP2_NV_FLAG_NONE.rawValue))
            }
            return nva.withUnsafeBufferPointer(body)
        }
    }

    static func monotonicNanoseconds() -> UInt64 { DispatchTime.now().uptimeNanoseconds }
}

/// Exchanges submitted together and awaited together: one continuation, resumed when the last one ends
/// (so a batch of pushes costs one task wake-up, not one each).
final class HTTP2ExchangeBatch: @unchecked Sendable {
    // Thread-safety: filled in by the submitting task before the hand-over, then touched only by the loop
    // thread (which finishes every stream), or only by the submitting task when the hand-over is refused.
    typealias Results = [(outcome: HTTP2Exchange.Outcome, finishedAt: ContinuousClock.Instant)]
    private var outcomes: [HTTP2Exchange.Outcome?]
    private var finishedAt: [ContinuousClock.Instant]
    private var remaining: Int
    private let continuation: CheckedContinuation<Results, Never>

    init(count: Int, continuation: CheckedContinuation<Results, Never>) {
        outcomes = Array(repeating: nil, count: count)
        finishedAt = Array(repeating: .now, count: count)
        remaining = count
        self.continuation = continuation
    }

    func finish(_ index: Int, _ outcome: HTTP2Exchange.Outcome) {
        outcomes[index] = outcome
        finishedAt[index] = .now
        remaining -= 1
        if remaining == 0 { continuation.resume(returning: zip(outcomes, finishedAt).map { ($0!, $1) }) }
    }
}
