import CNGHTTP2
import COpenSSL
import Dispatch
import Foundation
import HTTP2TLS
import Runtime
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// One accepted TCP connection: TLS (OpenSSL, non-blocking) and an nghttp2 server session, driven
/// by a `poll` loop on the connection's own thread. Many streams are served at once; a delayed
/// answer (latency fault) waits on a timer of the loop, so it holds up no other stream.
// @unchecked Sendable: all mutable state is confined to the connection thread; other threads only call
// `stop()` (an atomic and a pipe write).
final class HTTP2Connection: @unchecked Sendable {
    let id: Int
    private let fd: Int32
    private let core: SimulatorCore
    private let tls: TLSContext
    private let wakeRead: Int32
    private let wakeWrite: Int32
    private let stopping = Atomic<Bool>(false)

    private var ssl: OpaquePointer?
    private var session: OpaquePointer?
    /// Requests being received, by stream id.
    private var requests: [Int32: ReceivedRequest] = [:]
    /// Streams whose request is complete, waiting to be decided (filled by nghttp2 callbacks).
    private var completed: [Int32] = []
    /// Answers held back by a latency fault.
    private var delayed: [(streamID: Int32, due: UInt64, plan: ResponsePlan)] = []
    /// Response bodies being sent, by stream id.
    private var bodies: [Int32: (bytes: [UInt8], offset: Int)] = [:]
    private var openStreams = 0
    private var outbound = HTTP2TLSOutbound()
    private var sslWantsWrite = false
    private var lastAnswered: Int32 = 0
    private var closeAfterFlush = false
    private var closeNow = false
    /// Reused for every TLS read.
    private let readBuffer = UnsafeMutableBufferPointer<UInt8>.allocate(capacity: 32 * 1024)

    /// Which of the simulator's listeners accepted this connection (pushes, or channel management).
    private let listener: SimulatorListener

    init(
        id: Int, fd: Int32, core: SimulatorCore, tls: TLSContext, listener: SimulatorListener = .pushes
    ) throws(SimulatorError) {
        self.listener = listener
        guard let pipeFDs = WakePipe.make() else {
            throw SimulatorError(.socket, "cannot create a wake-up pipe")
        }
        self.id = id
        self.fd = fd
        self.core = core
        self.tls = tls
        wakeRead = pipeFDs.0
        wakeWrite = pipeFDs.1
    }

    /// The wake-up pipe lives as long as the object, so a late `stop()` never writes to a
    /// descriptor number that has been closed and reused.
    deinit {
        readBuffer.deallocate()
        close(wakeRead)
        close(wakeWrite)
    }

    /// Asks the loop to end (from any thread).
    func stop() {
        stopping.store(true, ordering: .releasing)
        WakePipe.wake(wakeWrite)
    }

    /// The connection's thread body: returns when the connection is over, all resources released.
    func run() {
        defer { cleanUp() }
        guard handshake() else { return }
        guard startSession() else { return }
        while !stopping.load(ordering: .acquiring) {
            guard flush() else { return }
            if closeNow { return }
            if closeAfterFlush && !outbound.isPending { return }
            if let session, nghttp2_session_want_read(session) == 0, nghttp2_session_want_write(session) == 0,
                !outbound.isPending, delayed.isEmpty
            {
                return
            }
            var events = Int16(POLLIN)
            if outbound.isPending || sslWantsWrite { events |= Int16(POLLOUT) }
            var fds = [pollfd(fd: fd, events: events, revents: 0), pollfd(fd: wakeRead, events: Int16(POLLIN), revents: 0)]
            let ready = poll(&fds, 2, pollTimeout())
            if ready < 0 && errno != EINTR { return }
            if fds[1].revents != 0 { drainWakePipe() }
            if fds[0].revents & Int16(POLLIN | POLLERR | POLLHUP) != 0 || sslWantsWrite && fds[0].revents != 0 {
                guard readAvailable() else { return }
            }
            fireDueAnswers()
        }
    }

    // MARK: TLS

    private func handshake() -> Bool {
        guard let ssl = SSL_new(tls.context) else { return false }
        self.ssl = ssl
        guard SSL_set_fd(ssl, fd) == 1 else { return false }
        SSL_set_accept_state(ssl)
        let deadline = HTTP2Connection.monotonicNanoseconds() + 10_000_000_000
        while !stopping.load(ordering: .acquiring) {
            let result = SSL_do_handshake(ssl)
            if result == 1 { return true }
            let events: Int16
            switch SSL_get_error(ssl, result) {
            case SSL_ERROR_WANT_READ: events = Int16(POLLIN)
            case SSL_ERROR_WANT_WRITE: events = Int16(POLLOUT)
            default:
                ERR_clear_error()
                return false
            }
            let now = HTTP2Connection.monotonicNanoseconds()
            guard now < deadline else { return false }
            var fds = [pollfd(fd: fd, events: events, revents: 0), pollfd(fd: wakeRead, events: Int16(POLLIN), revents: 0)]
            _ = poll(&fds, 2, Int32(min(1000, (deadline - now) / 1_000_000 + 1)))
        }
        return false
    }

    /// Reads everything OpenSSL has and feeds it to nghttp2; false when the connection is over.
    private func readAvailable() -> Bool {
        guard let ssl, let session else { return false }
        sslWantsWrite = false
        let buffer = readBuffer
        while true {
            let n = SSL_read(ssl, buffer.baseAddress, Int32(buffer.count))
            if n > 0 {
                if closeAfterFlush { continue }  // after GOAWAY: read and ignore
                let consumed = nghttp2_session_mem_recv(session, buffer.baseAddress, Int(n))
                if consumed < 0 { return false }
                decideCompleted()
                if closeNow || closeAfterFlush { return true }
                continue
            }
            switch SSL_get_error(ssl, n) {
            case SSL_ERROR_WANT_READ: return true
            case SSL_ERROR_WANT_WRITE:
                sslWantsWrite = true
                return true
            default:
                ERR_clear_error()
                return false
            }
        }
    }

    /// Moves nghttp2's output into the outbound buffer and writes what the socket takes.
    private func flush() -> Bool {
        guard let ssl, let session else { return false }
        switch outbound.flush(session: session, ssl: ssl, gather: !closeNow) {
        case .success: return true
        case .failure: return false
        }
    }

    // MARK: HTTP/2

    private func startSession() -> Bool {
        var callbacks: OpaquePointer?
        guard nghttp2_session_callbacks_new(&callbacks) == 0, let callbacks else { return false }
        defer { nghttp2_session_callbacks_del(callbacks) }
        nghttp2_session_callbacks_set_on_begin_headers_callback(callbacks, HTTP2Connection.onBeginHeaders)
        nghttp2_session_callbacks_set_on_header_callback(callbacks, HTTP2Connection.onHeader)
        nghttp2_session_callbacks_set_on_data_chunk_recv_callback(callbacks, HTTP2Connection.onDataChunk)
        nghttp2_session_callbacks_set_on_frame_recv_callback(callbacks, HTTP2Connection.onFrame)
        nghttp2_session_callbacks_set_on_stream_close_callback(callbacks, HTTP2Connection.onStreamClose)

        var option: OpaquePointer?
        guard nghttp2_option_new(&option) == 0, let option else { return false }
        defer { nghttp2_option_del(option) }
        // Some clients (curl) reset every finished stream; nghttp2's rapid-reset guard would GOAWAY after ~1000.
        nghttp2_option_set_stream_reset_rate_limit(option, 1 << 40, 1 << 40)

        var created: OpaquePointer?
        let me = Unmanaged.passUnretained(self).toOpaque()
        guard nghttp2_session_server_new2(&created, callbacks, me, option) == 0, let created else { return false }
        session = created
        var settings = [
            nghttp2_settings_entry(
                settings_id: Int32(NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS.rawValue),
                value: core.configuration.maximumConcurrentStreams)
        ]
        return nghttp2_submit_settings(created, UInt8(NGHTTP2_FLAG_NONE.rawValue), &settings, settings.count) == 0
    }

    private static func connection(_ userData: UnsafeMutableRawPointer?) -> HTTP2Connection? {
        userData.map { Unmanaged<HTTP2Connection>.fromOpaque($0).takeUnretainedValue() }
    }

    private static let onBeginHeaders: nghttp2_on_begin_headers_callback = { _, frame, userData in
        guard let frame, let me = connection(userData) else { return 0 }
        if frame.pointee.hd.type == UInt8(NGHTTP2_HEADERS.rawValue),
            frame.pointee.headers.cat == NGHTTP2_HCAT_REQUEST
        {
            let streamID = frame.pointee.hd.stream_id
            me.requests[streamID] = ReceivedRequest(connectionID: me.id, streamID: streamID, listener: me.listener)
            me.openStreams += 1
            me.core.observeConcurrentStreams(me.openStreams)
        }
        return 0
    }

    private static let onHeader: nghttp2_on_header_callback = { _, frame, name, nameLength, value, valueLength, _, userData in
        guard let frame, let name, let value, let me = connection(userData) else { return 0 }
        let streamID = frame.pointee.hd.stream_id
        guard me.requests[streamID] != nil else { return 0 }
        let n = String(decoding: UnsafeBufferPointer(start: name, count: nameLength), as: UTF8.self)
        let v = String(decoding: UnsafeBufferPointer(start: value, count: valueLength), as: UTF8.self)
        switch n {
        case ":method": me.requests[streamID]?.method = v
        case ":path": me.requests[streamID]?.path = v
        case ":scheme", ":authority": break
        default:
            if me.requests[streamID]!.headers.count < 128 { me.requests[streamID]?.headers.append((n, v)) }
        }
        return 0
    }

    private static let onDataChunk: nghttp2_on_data_chunk_recv_callback = { _, _, streamID, data, length, userData in
        guard let data, let me = connection(userData), me.requests[streamID] != nil else { return 0 }
        me.requests[streamID]!.bodySize += length
        let room = ReceivedRequest.bodyLimit - me.requests[streamID]!.body.count
        if room > 0 {
            me.requests[streamID]!.body.append(contentsOf: UnsafeBufferPointer(start: data, count: min(room, length)))
        }
        return 0
    }

    private static let onFrame: nghttp2_on_frame_recv_callback = { _, frame, userData in
        guard let frame, let me = connection(userData) else { return 0 }
        let type = frame.pointee.hd.type
        let ends = frame.pointee.hd.flags & UInt8(NGHTTP2_FLAG_END_STREAM.rawValue) != 0
        if ends, type == UInt8(NGHTTP2_HEADERS.rawValue) || type == UInt8(NGHTTP2_DATA.rawValue),
            me.requests[frame.pointee.hd.stream_id] != nil
        {
            me.completed.append(frame.pointee.hd.stream_id)
        }
        return 0
    }

    private static let onStreamClose: nghttp2_on_stream_close_callback = { _, streamID, _, userData in
        guard let me = connection(userData) else { return 0 }
        if me.requests.removeValue(forKey: streamID) != nil { me.openStreams -= 1 }
        me.bodies.removeValue(forKey: streamID)
        if let index = me.delayed.firstIndex(where: { $0.streamID == streamID }) {
            let entry = me.delayed.remove(at: index)
            me.abandon(entry.plan, reason: SimulatorReason.streamClosed)
        }
        return 0
    }

    private static let readBody: nghttp2_data_source_read_callback = { _, streamID, buffer, length, flags, _, userData in
        guard let buffer, let flags, let me = connection(userData), let body = me.bodies[streamID] else {
            flags?.pointee |= NGHTTP2_DATA_FLAG_EOF.rawValue
            return 0
        }
        let count = min(length, body.bytes.count - body.offset)
        body.bytes.withUnsafeBufferPointer { source in
            buffer.update(from: source.baseAddress! + body.offset, count: count)
        }
        me.bodies[streamID]!.offset += count
        if body.offset + count >= body.bytes.count {
            flags.pointee |= NGHTTP2_DATA_FLAG_EOF.rawValue
            me.bodies.removeValue(forKey: streamID)
        }
        return count
    }

    // MARK: Answers

    private func decideCompleted() {
        while !completed.isEmpty && !closeNow && !closeAfterFlush {
            let streamID = completed.removeFirst()
            guard var request = requests[streamID] else { continue }
            request.receivedAt = core.configuration.clock.now()
            requests[streamID] = request
            let plan = core.plan(for: request)
            if plan.delay > 0 {
                let due = HTTP2Connection.monotonicNanoseconds() + UInt64(plan.delay * 1_000_000_000)
                delayed.append((streamID, due, plan))
            } else {
                perform(plan, streamID: streamID)
            }
        }
    }

    private func fireDueAnswers() {
        guard !delayed.isEmpty else { return }
        let now = HTTP2Connection.monotonicNanoseconds()
        let due = delayed.filter { $0.due <= now }
        delayed.removeAll { $0.due <= now }
        for entry in due where !closeNow && !closeAfterFlush { perform(entry.plan, streamID: entry.streamID) }
    }

    private func pollTimeout() -> Int32 {
        guard let next = delayed.map(\.due).min() else { return 1000 }
        let now = HTTP2Connection.monotonicNanoseconds()
        guard next > now else { return 0 }
        return Int32(min(1000, (next - now + 999_999) / 1_000_000))
    }

    private func perform(_ plan: ResponsePlan, streamID: Int32) {
        guard let session else { return }
        switch plan.action {
        case .drop(let mode):
            if var record = plan.record {
                record.answered = false
                core.store(record)
            }
            for entry in delayed { abandon(entry.plan, reason: SimulatorReason.connectionDropped) }
            delayed.removeAll()
            switch mode {
            case .close:
                closeNow = true
            case .goaway:
                _ = nghttp2_submit_goaway(
                    session, UInt8(NGHTTP2_FLAG_NONE.rawValue), lastAnswered, NGHTTP2_NO_ERROR.rawValue, nil, 0)
                closeAfterFlush = true
            }
        case .answer(let status, let headers, let body):
            let fields = [(":status", String(status))] + headers + (body.isEmpty ? [] : [("content-length", String(body.count))])
            let result = HTTP2Connection.withHeaderFields(fields) { nva -> Int32 in
                if body.isEmpty {
                    return nghttp2_submit_response(session, streamID, nva.baseAddress, nva.count, nil)
                }
                bodies[streamID] = (body, 0)
                var provider = nghttp2_data_provider(
                    source: nghttp2_data_source(ptr: nil), read_callback: HTTP2Connection.readBody)
                return nghttp2_submit_response(session, streamID, nva.baseAddress, nva.count, &provider)
            }
            if var record = plan.record {
                record.answered = result == 0
                if result != 0 { record.reason = record.reason ?? SimulatorReason.streamClosed }
                core.store(record)
            }
            lastAnswered = max(lastAnswered, streamID)
        }
    }

    private func abandon(_ plan: ResponsePlan, reason: String) {
        guard var record = plan.record else { return }
        record.answered = false
        record.status = 0
        record.reason = reason
        core.store(record)
    }

    /// Lends nghttp2 name/value pairs (it copies them during the call).
    private static func withHeaderFields<R>(_ fields: [(String, String)], _ body: (UnsafeBufferPointer<nghttp2_nv>) -> R) -> R {
        var storage: [UnsafeMutablePointer<UInt8>] = []
        defer { for pointer in storage { pointer.deallocate() } }
        func copy(_ s: String) -> (UnsafeMutablePointer<UInt8>, Int) {
            let bytes = Array(s.utf8)
            let pointer = UnsafeMutablePointer<UInt8>.allocate(capacity: max(1, bytes.count))
            pointer.initialize(from: bytes, count: bytes.count)
            storage.append(pointer)
            return (pointer, bytes.count)
        }
        let nva = fields.map { field -> nghttp2_nv in
            let (name, nameLength) = copy(field.0)
            let (value, valueLength) = copy(field.1)
            return nghttp2_nv(
                name: name, value: value, namelen: nameLength, valuelen: valueLength, flags: UInt8(NGHTTP2_NV_FLAG_NONE.rawValue))
        }
        return nva.withUnsafeBufferPointer(body)
    }

    // MARK: Plumbing

    private func drainWakePipe() { WakePipe.drain(wakeRead) }

    private func cleanUp() {
        let reason = closeNow || closeAfterFlush ? SimulatorReason.connectionDropped : SimulatorReason.streamClosed
        for entry in delayed { abandon(entry.plan, reason: reason) }
        delayed.removeAll()
        // Complete requests that arrived with the one that dropped the connection.
        for streamID in completed where !path(of: streamID).hasPrefix("/_sim/") {
            guard var request = requests[streamID] else { continue }
            request.receivedAt = core.configuration.clock.now()
            core.recordUnanswered(request, reason: reason)
        }
        completed.removeAll()
        if let session { nghttp2_session_del(session) }
        session = nil
        if let ssl {
            if !closeNow { _ = SSL_shutdown(ssl) }
            SSL_free(ssl)
        }
        ssl = nil
        ERR_clear_error()
        close(fd)
    }

    private func path(of streamID: Int32) -> String { requests[streamID]?.path ?? "" }

    static func monotonicNanoseconds() -> UInt64 { DispatchTime.now().uptimeNanoseconds }
}
