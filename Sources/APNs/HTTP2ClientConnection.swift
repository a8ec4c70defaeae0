import CNGHTTP2
import COpenSSL
import Foundation
import HTTP2TLS

#if canImport(Glibc)
    import Glibc
#endif

/// One TLS connection to one `host:port` with an nghttp2 client session, driven by the transport's loop
/// thread: the host's addresses (resolved off the loop thread, `resolved(_:)`), a non-blocking connect (each
/// address in turn), the TLS handshake (ALPN `h2`, the certificate checked against the host), then many
/// streams at once. Everything nghttp2 has to send is gathered into one buffer and written with as few
/// `SSL_write`s as the socket takes, so a batch of requests costs one TLS record train, not a write each.
final class HTTP2ClientConnection {
    // Thread-safety: only the transport's loop thread touches a connection (nghttp2's callbacks run on
    // it, inside `nghttp2_session_mem_recv`/`mem_send`).
    enum Phase { case resolving, connecting, handshaking, open, closed }

    let target: HTTP2Target
    private(set) var phase = Phase.resolving
    /// The server sent GOAWAY (or we closed for idleness): no new streams go on this connection.
    private(set) var goingAway = false
    /// Exchanges the server refused unprocessed (above a GOAWAY's last stream, REFUSED_STREAM) and those
    /// still waiting when it went away: the transport sends them on another connection.
    var refused: [HTTP2ClientStream] = []

    private let settings: HTTP2ClientTransport.Settings
    private let tls: OpaquePointer
    private var addresses: [HTTP2Resolver.Address] = []
    private var nextAddress = 0
    private var lastConnectError = ""
    private var fd: Int32 = -1
    private var ssl: OpaquePointer?
    private var session: OpaquePointer?
    private var handshakeEvents = Int16(POLLOUT)
    private let connectDeadline: UInt64

    /// Submitted and not yet closed, by stream id.
    private var open: [Int32: HTTP2ClientStream] = [:]
    /// Waiting for the connection or for a free stream, in order (`waitingHead` is the next one).
    private var waiting: [HTTP2ClientStream] = []
    private var waitingHead = 0
    private var remoteSettingsSeen = false
    /// The last stream id a GOAWAY named (`Int32.max` before any): the streams above it were not processed.
    private var goawayLastStream = Int32.max
    private var lastActive: UInt64
    private var lastPing: UInt64 = 0
    /// The earliest deadline of any exchange here (a scan for expired ones runs only once it passes).
    private var earliestDeadline = UInt64.max

    private var outbound = HTTP2TLSOutbound()
    private var sslWantsWrite = false
    private let readBuffer: UnsafeMutableBufferPointer<UInt8>

    init(target: HTTP2Target, settings: HTTP2ClientTransport.Settings, tls: OpaquePointer, now: UInt64) {
        self.target = target
        self.settings = settings
        self.tls = tls
        self.connectDeadline = now + UInt64(max(1, settings.connectTimeoutMilliseconds)) * 1_000_000
        self.lastActive = now
        self.readBuffer = .allocate(capacity: 64 * 1024)
    }

    deinit {
        readBuffer.deallocate()
        release()
    }

    var acceptsStreams: Bool { phase != .closed && !goingAway }
    /// Exchanges here not yet finished.
    var isIdle: Bool { open.isEmpty && waitingHead >= waiting.count }

    func enqueue(_ stream: HTTP2ClientStream) {
        waiting.append(stream)
        earliestDeadline = min(earliestDeadline, stream.deadline)
    }

    // MARK: Connecting

    /// The host's addresses came (or why there are none): connects to the first. Ignored once the connection
    /// has given up (its connect timeout passed while the resolver worked).
    func resolved(_ resolution: Result<[HTTP2Resolver.Address], HTTP2Exchange.Failure>) {
        guard phase == .resolving else { return }
        switch resolution {
        case .success(let found):
            addresses = found
            phase = .connecting
            connectNextAddress()
        case .failure(let failure):
            failSetUp(failure.kind, failure.message)
        }
    }

    private func connectNextAddress() {
        while nextAddress < addresses.count {
            let (family, address) = addresses[nextAddress]
            nextAddress += 1
            let socketFD = socket(
                family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
            guard socketFD >= 0 else {
                lastConnectError = String(cString: strerror(errno))
                continue
            }
            configure(socketFD)
            let result = address.withUnsafeBytes { raw in
                connect(socketFD, raw.baseAddress!.assumingMemoryBound(to: sockaddr.self), socklen_t(raw.count))
            }
            if result == 0 || errno == EINPROGRESS {
                fd = socketFD
                phase = .connecting
                if result == 0 { beginHandshake() }
                return
            }
            lastConnectError = String(cString: strerror(errno))
            close(socketFD)
        }
        failSetUp(.connectFailed, "cannot connect to \(target.authority): \(lastConnectError)")
    }

    private func configure(_ socketFD: Int32) {
        var on: Int32 = 1
        let size = socklen_t(MemoryLayout<Int32>.size)
        _ = setsockopt(socketFD, Int32(IPPROTO_TCP), TCP_NODELAY, &on, size)
        _ = setsockopt(socketFD, SOL_SOCKET, SO_KEEPALIVE, &on, size)
        var idle = Int32(settings.keepAliveSeconds)
        var interval = Int32(max(1, settings.keepAliveSeconds / 2))
        _ = setsockopt(socketFD, Int32(IPPROTO_TCP), TCP_KEEPIDLE, &idle, size)
        _ = setsockopt(socketFD, Int32(IPPROTO_TCP), TCP_KEEPINTVL, &interval, size)
    }

    private func beginHandshake() {
        guard let ssl = SSL_new(tls) else {
            failSetUp(.connectFailed, "cannot create a TLS session")
            return
        }
        self.ssl = ssl
        _ = SSL_set_fd(ssl, fd)
        if target.hostIsAddress {
            _ = X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), target.host)
        } else {
            target.host.withCString { name in  // SNI (OpenSSL copies the name)
                _ = SSL_ctrl(
                    ssl, SSL_CTRL_SET_TLSEXT_HOSTNAME, Int(TLSEXT_NAMETYPE_host_name), UnsafeMutableRawPointer(mutating: name))
            }
            _ = SSL_set1_host(ssl, target.host)
        }
        SSL_set_connect_state(ssl)
        phase = .handshaking
        continueHandshake()
    }

    private func continueHandshake() {
        guard let ssl else { return }
        let result = SSL_do_handshake(ssl)
        if result == 1 {
            var protocolName: UnsafePointer<UInt8>?
            var length: UInt32 = 0
            SSL_get0_alpn_selected(ssl, &protocolName, &length)
            guard length == 2, let protocolName, protocolName[0] == UInt8(ascii: "h"), protocolName[1] == UInt8(ascii: "2")
            else {
                failSetUp(.connectFailed, "\(target.authority) did not agree to HTTP/2 (ALPN h2)")
                return
            }
            guard startSession() else {
                failSetUp(.connectFailed, "cannot start an HTTP/2 session")
                return
            }
            phase = .open
            readAvailable()  // the server's SETTINGS may already sit in OpenSSL's buffer
            return
        }
        switch SSL_get_error(ssl, result) {
        case SSL_ERROR_WANT_READ: handshakeEvents = Int16(POLLIN)
        case SSL_ERROR_WANT_WRITE: handshakeEvents = Int16(POLLOUT)
        default:
            let verdict = SSL_get_verify_result(ssl)
            let detail = takeOpenSSLError()
            if verdict != X509_V_OK {
                let reason = String(cString: X509_verify_cert_error_string(verdict))
                failSetUp(.untrustedServer, "the certificate of \(target.authority) is not trusted: \(reason)")
            } else {
                failSetUp(.connectFailed, "TLS handshake with \(target.authority) failed: \(detail)")
            }
        }
    }

    private func startSession() -> Bool {
        var callbacks: OpaquePointer?
        guard nghttp2_session_callbacks_new(&callbacks) == 0, let callbacks else { return false }
        defer { nghttp2_session_callbacks_del(callbacks) }
        nghttp2_session_callbacks_set_on_header_callback(callbacks, Self.onHeader)
        nghttp2_session_callbacks_set_on_data_chunk_recv_callback(callbacks, Self.onDataChunk)
        nghttp2_session_callbacks_set_on_frame_recv_callback(callbacks, Self.onFrame)
        nghttp2_session_callbacks_set_on_stream_close_callback(callbacks, Self.onStreamClose)
        var created: OpaquePointer?
        let me = Unmanaged.passUnretained(self).toOpaque()
        guard nghttp2_session_client_new(&created, callbacks, me) == 0, let created else { return false }
        session = created
        var entries = [
            nghttp2_settings_entry(settings_id: Int32(NGHTTP2_SETTINGS_ENABLE_PUSH.rawValue), value: 0)
        ]
        return nghttp2_submit_settings(created, UInt8(NGHTTP2_FLAG_NONE.rawValue), &entries, entries.count) == 0
    }

    // MARK: The loop's calls

    /// What to wait for on the socket; nil when there is no socket.
    var pollEvents: (fd: Int32, events: Int16)? {
        guard fd >= 0, phase != .closed else { return nil }
        switch phase {
        case .resolving: return nil
        case .connecting: return (fd, Int16(POLLOUT))
        case .handshaking: return (fd, handshakeEvents)
        case .open:
            let writing = outbound.isPending || sslWantsWrite
            return (fd, Int16(POLLIN) | (writing ? Int16(POLLOUT) : 0))
        case .closed: return nil
        }
    }

    /// The socket is ready for what `pollEvents` asked (or failed).
    func handle(revents: Int16) {
        switch phase {
        case .resolving:
            break
        case .connecting:
            var error: Int32 = 0
            var size = socklen_t(MemoryLayout<Int32>.size)
            _ = getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &size)
            if error == 0 && revents & Int16(POLLOUT) != 0 {
                beginHandshake()
            } else if error != 0 || revents & Int16(POLLERR | POLLHUP) != 0 {
                lastConnectError = String(cString: strerror(error == 0 ? ECONNREFUSED : error))
                close(fd)
                fd = -1
                connectNextAddress()
            }
        case .handshaking:
            continueHandshake()
        case .open:
            if revents & Int16(POLLIN | POLLERR | POLLHUP) != 0 || sslWantsWrite {
                readAvailable()
            }
        case .closed:
            break
        }
    }

    /// Submits waiting exchanges as streams allow and writes what nghttp2 has to send.
    func service(now: UInt64) {
        guard phase == .open else { return }
        submitWaiting(now: now)
        flush()
        if !open.isEmpty { lastActive = now }
        if goingAway && open.isEmpty && !outbound.isPending {
            shutDown()
            return
        }
        if phase == .open, let session, nghttp2_session_want_read(session) == 0, nghttp2_session_want_write(session) == 0,
            !outbound.isPending
        {
            lose("\(target.authority) ended the HTTP/2 session")
        }
    }

    /// Fails exchanges past their deadline (and a connection not up by the connect timeout); returns the
    /// next deadline to wake for.
    func expire(now: UInt64) -> UInt64 {
        if phase == .resolving, now >= connectDeadline {
            failSetUp(.connectFailed, "resolving \(target.host) took longer than \(settings.connectTimeoutMilliseconds) ms")
        }
        if phase == .connecting || phase == .handshaking, now >= connectDeadline {
            failSetUp(
                .connectFailed, "connecting to \(target.authority) took longer than \(settings.connectTimeoutMilliseconds) ms")
        }
        if now >= earliestDeadline {
            var next = UInt64.max
            for (id, stream) in open {
                if stream.deadline <= now {
                    open.removeValue(forKey: id)
                    if let session {
                        _ = nghttp2_submit_rst_stream(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), id, NGHTTP2_CANCEL.rawValue)
                    }
                    stream.fail(.timedOut, "no answer within \(stream.exchange.timeoutMilliseconds) ms")
                } else {
                    next = min(next, stream.deadline)
                }
            }
            for stream in waiting[waitingHead...] where !stream.finished {
                if stream.deadline <= now {
                    // Never handed to the server, so it cannot have arrived: not an unknown outcome.
                    let reason = phase == .open ? "no free stream" : "no connection"
                    stream.fail(.connectFailed, "not sent within \(stream.exchange.timeoutMilliseconds) ms (\(reason))")
                } else {
                    next = min(next, stream.deadline)
                }
            }
            earliestDeadline = next
        }
        var wake = earliestDeadline
        if phase == .resolving || phase == .connecting || phase == .handshaking { wake = min(wake, connectDeadline) }
        if phase == .open && isIdle {
            let idleDeadline = lastActive + UInt64(settings.maximumIdleSeconds) * 1_000_000_000
            if now >= idleDeadline { retire() } else { wake = min(wake, idleDeadline) }
            // An idle connection sends an HTTP/2 PING every keep-alive interval: it keeps NAT mappings
            // and the server's idle timer from closing it, and a dead peer shows up as a failed write.
            let interval = UInt64(max(1, settings.keepAliveSeconds)) * 1_000_000_000
            let pingAt = max(lastActive, lastPing) + interval
            if phase == .open, let session {
                if now >= pingAt {
                    _ = nghttp2_submit_ping(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), nil)
                    lastPing = now
                    flush()
                    wake = min(wake, now + interval)
                } else {
                    wake = min(wake, pingAt)
                }
            }
        }
        return wake
    }

    /// Stops taking new streams: the exchanges still waiting move to another connection; the open ones
    /// finish here, and then the connection closes.
    func retire() {
        goingAway = true
        moveWaitingToRefused()
        if open.isEmpty { shutDown() }
    }

    /// Fails every exchange here and closes (the transport is shutting down).
    func abandon(_ message: String) {
        for stream in open.values { stream.fail(.connectionLost, message) }
        open = [:]
        for stream in takeWaiting() + refused { stream.fail(.connectFailed, message) }
        refused = []
        shutDown()
    }

    // MARK: Streams

    private func submitWaiting(now: UInt64) {
        guard let session, !goingAway, waitingHead < waiting.count else { return }
        let remoteLimit =
            remoteSettingsSeen
            ? Int(nghttp2_session_get_remote_settings(session, NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS))
            : 100  // before the server's SETTINGS, no more than RFC 9113 lets a peer assume
        let limit = min(remoteLimit, max(1, settings.maximumConcurrentStreams))
        while open.count < limit, waitingHead < waiting.count {
            let stream = waiting[waitingHead]
            waitingHead += 1
            if stream.finished { continue }
            let id: Int32 = stream.withHeaderBlock { nva in
                if stream.exchange.body.isEmpty {
                    return nghttp2_submit_request(session, nil, nva.baseAddress, nva.count, nil, nil)
                }
                var provider = nghttp2_data_provider(source: nghttp2_data_source(ptr: nil), read_callback: Self.readBody)
                return nghttp2_submit_request(session, nil, nva.baseAddress, nva.count, &provider, nil)
            }
            if id < 0 {
                stream.fail(.connectFailed, "cannot submit the request: \(String(cString: nghttp2_strerror(id)))")
            } else {
                open[id] = stream
            }
            lastActive = now
        }
        if waitingHead >= waiting.count {
            waiting.removeAll(keepingCapacity: waiting.capacity <= 4096)
            waitingHead = 0
        } else if waitingHead > 1024 && waitingHead * 2 > waiting.count {
            waiting.removeFirst(waitingHead)
            waitingHead = 0
        }
    }

    private func moveWaitingToRefused() { refused.append(contentsOf: takeWaiting()) }

    /// Empties the waiting queue, returning the exchanges in it not yet finished (in order).
    private func takeWaiting() -> [HTTP2ClientStream] {
        defer {
            waiting = []
            waitingHead = 0
        }
        return waiting[waitingHead...].filter { !$0.finished }
    }

    // MARK: Reading and writing

    /// Reads everything OpenSSL has and feeds it to nghttp2 (whose callbacks finish streams).
    private func readAvailable() {
        guard let ssl, let session else { return }
        sslWantsWrite = false
        while phase == .open {
            let n = SSL_read(ssl, readBuffer.baseAddress, Int32(readBuffer.count))
            if n > 0 {
                let consumed = nghttp2_session_mem_recv(session, readBuffer.baseAddress, Int(n))
                if consumed < 0 {
                    lose("HTTP/2 error from \(target.authority): \(String(cString: nghttp2_strerror(Int32(consumed))))")
                    return
                }
                continue
            }
            switch SSL_get_error(ssl, n) {
            case SSL_ERROR_WANT_READ:
                return
            case SSL_ERROR_WANT_WRITE:
                sslWantsWrite = true
                return
            case SSL_ERROR_ZERO_RETURN:
                lose("\(target.authority) closed the connection")
                return
            default:
                lose("the connection to \(target.authority) broke: \(takeOpenSSLError())")
                return
            }
        }
    }

    /// Moves nghttp2's output into the outbound buffer and writes what the socket takes.
    ///
    /// A write that fails may follow a GOAWAY the server sent before it closed, not read yet (it came while
    /// the loop was writing): what the socket still holds is read first, so that the streams the GOAWAY
    /// names unprocessed go to another connection rather than fail as lost.
    private func flush() {
        guard let ssl, let session else { return }
        if case .failure(let failure) = outbound.flush(session: session, ssl: ssl) {
            readAvailable()
            lose("cannot write to \(target.authority): \(failure)")
        }
    }

    // MARK: Ending

    /// The connection was never usable: every exchange here fails with `kind`.
    private func failSetUp(_ kind: HTTP2Exchange.Failure.Kind, _ message: String) {
        for stream in takeWaiting() { stream.fail(kind, message) }
        shutDown()
    }

    /// The connection broke while open: requests sent fail as lost (the server may have them); those
    /// never sent go to another connection.
    private func lose(_ message: String) {
        for stream in open.values { stream.fail(.connectionLost, message) }
        open = [:]
        moveWaitingToRefused()
        shutDown()
    }

    private func shutDown() {
        guard phase != .closed else { return }
        phase = .closed
        release()
    }

    private func release() {
        if let session { nghttp2_session_del(session) }
        session = nil
        if let ssl { SSL_free(ssl) }
        ssl = nil
        if fd >= 0 { close(fd) }
        fd = -1
        ERR_clear_error()
    }

    // MARK: nghttp2 callbacks

    private static func connection(_ userData: UnsafeMutableRawPointer?) -> HTTP2ClientConnection? {
        userData.map { Unmanaged<HTTP2ClientConnection>.fromOpaque($0).takeUnretainedValue() }
    }

    /// `name:` bytes of each kept answer header.
    private static let keptHeaderNames: [[UInt8]] = HTTP2Exchange.keptHeaders.map { Array($0.utf8) }

    private static let onHeader: nghttp2_on_header_callback = { _, frame, name, nameLength, value, valueLength, _, userData in
        guard let frame, let name, let value, let me = connection(userData),
            let stream = me.open[frame.pointee.hd.stream_id]
        else { return 0 }
        let nameBytes = UnsafeBufferPointer(start: name, count: nameLength)
        if nameLength == 7, nameBytes.elementsEqual(":status".utf8) {
            var status = 0
            for digit in UnsafeBufferPointer(start: value, count: valueLength) where digit >= 48 && digit <= 57 {
                status = status * 10 + Int(digit - 48)
            }
            stream.status = status
            return 0
        }
        for kept in keptHeaderNames where kept.count == nameLength && nameBytes.elementsEqual(kept) {
            stream.headers[String(decoding: kept, as: UTF8.self)] = String(
                decoding: UnsafeBufferPointer(start: value, count: valueLength), as: UTF8.self)
        }
        return 0
    }

    private static let onDataChunk: nghttp2_on_data_chunk_recv_callback = { _, _, streamID, data, length, userData in
        guard let data, let me = connection(userData), let stream = me.open[streamID] else { return 0 }
        let room = HTTP2ClientStream.bodyLimit - stream.body.count
        if room > 0 { stream.body.append(contentsOf: UnsafeBufferPointer(start: data, count: min(room, length))) }
        return 0
    }

    private static let onFrame: nghttp2_on_frame_recv_callback = { _, frame, userData in
        guard let frame, let me = connection(userData) else { return 0 }
        let type = frame.pointee.hd.type
        switch type {
        case UInt8(NGHTTP2_HEADERS.rawValue), UInt8(NGHTTP2_DATA.rawValue):
            if frame.pointee.hd.flags & UInt8(NGHTTP2_FLAG_END_STREAM.rawValue) != 0 {
                me.open[frame.pointee.hd.stream_id]?.ended = true
            }
        case UInt8(NGHTTP2_SETTINGS.rawValue):
            if frame.pointee.hd.flags & UInt8(NGHTTP2_FLAG_ACK.rawValue) == 0 { me.remoteSettingsSeen = true }
        case UInt8(NGHTTP2_GOAWAY.rawValue):
            me.goingAway = true
            me.goawayLastStream = min(me.goawayLastStream, frame.pointee.goaway.last_stream_id)
            me.moveWaitingToRefused()
        default:
            break
        }
        return 0
    }

    private static let onStreamClose: nghttp2_on_stream_close_callback = { _, streamID, errorCode, userData in
        guard let me = connection(userData), let stream = me.open.removeValue(forKey: streamID) else { return 0 }
        if stream.ended && stream.status > 0 {
            stream.answer()
        } else if stream.status == 0 && (errorCode == NGHTTP2_REFUSED_STREAM.rawValue || streamID > me.goawayLastStream) {
            // Unprocessed by the server (refused, or above the last stream its GOAWAY named: RFC 9113 §6.8),
            // so safe to send again, from the start.
            stream.rewind()
            me.refused.append(stream)
        } else {
            let name = String(cString: nghttp2_http2_strerror(errorCode))
            stream.fail(.connectionLost, "\(me.target.authority) closed the stream before answering (\(name))")
        }
        return 0
    }

    private static let readBody: nghttp2_data_source_read_callback = { _, streamID, buffer, length, flags, _, userData in
        guard let buffer, let flags, let me = connection(userData), let stream = me.open[streamID] else {
            flags?.pointee |= NGHTTP2_DATA_FLAG_EOF.rawValue
            return 0
        }
        let body = stream.exchange.body
        let count = min(length, body.count - stream.sent)
        body.withUnsafeBufferPointer { source in buffer.update(from: source.baseAddress! + stream.sent, count: count) }
        stream.sent += count
        if stream.sent >= body.count { flags.pointee |= NGHTTP2_DATA_FLAG_EOF.rawValue }
        return count
    }
}
