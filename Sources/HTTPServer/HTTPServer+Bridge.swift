import CMicroHTTPD
import Foundation
import Runtime

#if canImport(Glibc)
    import Glibc
#endif

// The C side: libmicrohttpd's callbacks, which run on its polling threads. Nothing here waits.
extension HTTPServer {
    /// Starts the daemons (the ordinary one, and the holding one when `holdingPathPrefixes` names paths), each
    /// without a listening socket of its own: `AcceptLoop` hands them the connections. Nil when one fails.
    func startDaemons() -> Daemons? {
        guard let general = startDaemon() else { return nil }
        guard !configuration.holdingPathPrefixes.isEmpty else { return Daemons(general: DaemonHandle(general), holding: nil) }
        guard let holding = startDaemon() else {
            MHD_stop_daemon(general)
            return nil
        }
        return Daemons(general: DaemonHandle(general), holding: DaemonHandle(holding))
    }

    /// Starts one daemon. Its per-address limit is none: `AcceptLoop` counts addresses over both daemons.
    private func startDaemon() -> OpaquePointer? {
        var options = lv_mhd_options(
            listen_fd: -1,
            thread_pool_size: UInt32(configuration.threadCount),
            connection_limit: AcceptLoop.daemonConnectionLimit(
                connectionLimit: configuration.connectionLimit, threads: configuration.threadCount),
            per_ip_connection_limit: 0,
            connection_timeout: UInt32(configuration.idleTimeoutSeconds),
            connection_memory_limit: configuration.maxHeaderBytes,
            turbo: configuration.turbo ? 1 : 0)
        // The daemon never outlives `run()`, which holds `self`.
        let context = Unmanaged.passUnretained(self).toOpaque()
        return lv_mhd_start(
            &options,
            { context, connection, url, method, version, uploadData, uploadSize, slot in
                guard let context, let connection, let uploadSize, let slot else { return .NO }
                let server = Unmanaged<HTTPServer>.fromOpaque(context).takeUnretainedValue()
                return server.access(
                    connection, url: url, method: method, version: version, uploadData: uploadData,
                    uploadSize: uploadSize, slot: slot)
            },
            context,
            { context, connection, slot, termination in
                guard let context else { return }
                let server = Unmanaged<HTTPServer>.fromOpaque(context).takeUnretainedValue()
                // The next request on this connection is being received from now.
                if let connection { server.deadlines.answered(connection, at: server.clock.now()) }
                guard let slot, let raw = slot.pointee else { return }
                slot.pointee = nil
                let request = Unmanaged<RequestContext>.fromOpaque(raw).takeRetainedValue()
                server.completed(request, termination: termination)
            },
            context,
            { context, connection, _, code in
                guard let context, let connection else { return }
                let server = Unmanaged<HTTPServer>.fromOpaque(context).takeUnretainedValue()
                if code == .CONNECTION_NOTIFY_STARTED {
                    server.deadlines.opened(connection, socket: lv_mhd_connection_fd(connection), at: server.clock.now())
                } else {
                    server.deadlines.closed(connection)
                    server.acceptLoop.withLock { $0 }?.closed(
                        address: lv_mhd_client_address(connection).flatMap(ClientAddress.init))
                }
            },
            context,
            // Keep the path and query raw: decoding here would turn `%2F` into a path separator.
            { _, _, text in text.map { strlen($0) } ?? 0 },
            nil)
    }

    /// MHD's access handler: called once when the headers are in, once per piece of body,
    /// once when the request is complete, and once more after each resume.
    func access(
        _ connection: OpaquePointer, url: UnsafePointer<CChar>?, method: UnsafePointer<CChar>?,
        version: UnsafePointer<CChar>?, uploadData: UnsafePointer<CChar>?, uploadSize: UnsafeMutablePointer<Int>,
        slot: UnsafeMutablePointer<UnsafeMutableRawPointer?>
    ) -> MHD_Result {
        guard let raw = slot.pointee else {
            return begin(connection, url: url, method: method, version: version, slot: slot)
        }
        let request = Unmanaged<RequestContext>.fromOpaque(raw).takeUnretainedValue()
        if request.status != nil { return .YES }  // answered early (413); MHD drops the rest

        if uploadSize.pointee > 0 {
            let count = uploadSize.pointee
            uploadSize.pointee = 0
            return receive(request, bytes: uploadData, count: count)
        }
        if let answer = request.pending.withLock({ $0.take() }) {
            return queue(answer, for: request)
        }
        if request.overflowed {
            return queue(tooLarge(), for: request)
        }
        if request.dispatched {
            // Resumed without an answer: cannot happen by construction; never run a handler twice.
            logger.error("http connection resumed without an answer", ["http.request_id": request.requestID])
            return queue(.error(status: 500, code: "internal_error", message: "The server lost the answer."), for: request)
        }
        return dispatch(request)
    }

    /// Headers are in: make the request's context and refuse a declared body over the limit at once.
    private func begin(
        _ connection: OpaquePointer, url: UnsafePointer<CChar>?, method: UnsafePointer<CChar>?,
        version: UnsafePointer<CChar>?, slot: UnsafeMutablePointer<UnsafeMutableRawPointer?>
    ) -> MHD_Result {
        var requestID = RequestID.generate()
        if configuration.acceptsClientRequestID, let sent = headerValue(connection, "X-Request-Id"),
            RequestID.isAcceptable(sent)
        {
            requestID = sent
        }
        let request = RequestContext(
            serial: registry.open(), connection: connection,
            method: method.map { String(cString: $0) } ?? "",
            rawPath: url.map { String(cString: $0) } ?? "",
            version: version.map { String(cString: $0) } ?? "",
            requestID: requestID, tracker: liveContexts)
        slot.pointee = Unmanaged.passRetained(request).toOpaque()

        // Framing two parties could read two ways (a proxy one way, this server the other: request
        // smuggling) is refused, and the connection closed, since where the next request starts is unknown.
        let lengths = contentLengths(connection)
        if Set(lengths).count > 1 || (!lengths.isEmpty && headerValue(connection, "Transfer-Encoding") != nil) {
            request.closesConnection = true
            return queue(
                .error(
                    status: 400, code: "malformed_request",
                    message: "The request's framing is ambiguous (Content-Length with Transfer-Encoding, or two lengths)."),
                for: request)
        }
        if let declared = lengths.first {
            // MHD has already refused a malformed Content-Length with 400.
            if let length = Int(declared), length <= configuration.maxBodyBytes {
                request.body.reserveCapacity(length)
            } else {
                request.overflowed = true
                return queue(tooLarge(), for: request)
            }
        }
        return .YES
    }

    /// A piece of body: keep it while under the limit, count and drop it after.
    private func receive(_ request: RequestContext, bytes: UnsafePointer<CChar>?, count: Int) -> MHD_Result {
        if !request.overflowed, request.body.count + count <= configuration.maxBodyBytes, let bytes {
            bytes.withMemoryRebound(to: UInt8.self, capacity: count) { request.body.append($0, count: count) }
            return .YES
        }
        // Over the limit mid-upload (chunked): MHD cannot answer before the upload ends, so the rest
        // is discarded without being kept, up to a bound; past it the connection is cut.
        request.overflowed = true
        request.body = Data()
        request.discardedBytes += count
        return request.discardedBytes > discardLimit ? .NO : .YES
    }

    /// The request is complete: suspend the connection and run the handler in a Swift task.
    private func dispatch(_ request: RequestContext) -> MHD_Result {
        let connection = request.connection
        deadlines.arrived(connection)
        guard let segments = PercentDecoding.pathSegments(request.rawPath), let query = queryItems(connection) else {
            return queue(
                .error(status: 400, code: "malformed_request", message: "The request target is not valid."),
                for: request)
        }
        let message = HTTPRequest(
            method: HTTPMethod(request.method), rawPath: request.rawPath, pathSegments: segments, queryItems: query,
            headers: headers(connection), body: request.body, remoteAddress: remoteAddress(connection),
            id: request.requestID, version: request.version)
        request.body = Data()
        request.dispatched = true

        MHD_suspend_connection(connection)
        let serial = request.serial
        if registry.admit(request, deadline: clock.now() + configuration.requestTimeout) {
            let handler = self.handler
            // Runs here, on this thread, until the handler first waits (see InlineTaskExecutor).
            let deadline = RequestDeadline(serial: serial, registry: registry, clock: clock)
            let task = Task(executorPreference: InlineTaskExecutor.shared) {
                let response = await RequestDeadline.$current.withValue(deadline) { await handler(message) }
                self.deliver(serial, response)
            }
            if !registry.attach(serial, task: task) {
                // Answered before it could be attached: a finished handler ignores this; an overdue one stops.
                InlineTaskExecutor.deferringJobs { task.cancel() }
            }
        } else {
            // Stopping: answer through the same resume path so no connection stays suspended.
            request.pending.withLock {
                $0 = .error(status: 503, code: "shutting_down", message: "The server is shutting down; try again.")
            }
            MHD_resume_connection(connection)
            registry.resumed()
        }
        return .YES
    }

    /// Queues `response` on the request's connection. MHD copies a small body; a large one (a fleet's day is
    /// megabytes, asked for many times a second) it sends from the response's own bytes, which it keeps
    /// alive until it is done with them.
    func queue(_ response: HTTPResponse, for request: RequestContext) -> MHD_Result {
        let made = Self.response(sending: response.body)
        guard let made else { return .NO }
        defer { MHD_destroy_response(made) }
        for field in response.headers {
            if HTTPHeaders.sameName(field.name, "Content-Length") || HTTPHeaders.sameName(field.name, "Transfer-Encoding")
                || HTTPHeaders.sameName(field.name, "X-Request-Id") || HTTPHeaders.sameName(field.name, "Connection")
                || HTTPHeaders.sameName(field.name, "X-Content-Type-Options")
            {
                continue
            }
            // MHD refuses names or values with CR/LF; such a field is dropped, not sent.
            _ = MHD_add_response_header(made, field.name, field.value)
        }
        _ = MHD_add_response_header(made, "X-Request-Id", request.requestID)
        _ = MHD_add_response_header(made, "X-Content-Type-Options", "nosniff")
        if !configuration.keepAlive || request.overflowed || request.closesConnection || registry.isShuttingDown {
            _ = MHD_add_response_header(made, "Connection", "close")
        }
        let status = (200...599).contains(response.status) ? response.status : 500
        request.status = status
        request.route = response.route
        request.logMetadata = response.logMetadata
        return MHD_queue_response(request.connection, UInt32(status), made)
    }

    /// Bodies from this size on are lent to MHD rather than copied.
    public static let lentBodyBytes = 32 * 1024

    /// An immutable body kept alive for MHD, which releases it when the response is destroyed.
    private final class LentBody {
        let body: Data
        init(_ body: Data) { self.body = body }
    }

    /// An MHD response with `body` as its content: copied when small, else lent (see `LentBody`).
    static func response(sending body: Data) -> OpaquePointer? {
        // Read only: the mutable pointer 0.9's signatures ask for is never written through, and asking `Data`
        // for mutable bytes would copy a body it shares with the response first.
        guard body.count >= lentBodyBytes else {
            return body.withUnsafeBytes { bytes in
                MHD_create_response_from_buffer(
                    bytes.count, UnsafeMutableRawPointer(mutating: bytes.baseAddress), .RESPMEM_MUST_COPY)
            }
        }
        // The box holds the only reference MHD relies on, and nothing mutates it: the bytes stay where they
        // are until the release.
        let lent = Unmanaged.passRetained(LentBody(body))
        let made = lent.takeUnretainedValue().body.withUnsafeBytes { bytes in
            MHD_create_response_from_buffer_with_free_callback_cls(
                bytes.count, UnsafeMutableRawPointer(mutating: bytes.baseAddress),
                { box in if let box { Unmanaged<LentBody>.fromOpaque(box).release() } }, lent.toOpaque())
        }
        if made == nil { lent.release() }
        return made
    }

    /// MHD reported the request finished: the one log line and the metrics.
    func completed(_ request: RequestContext, termination: MHD_RequestTerminationCode) {
        registry.close()
        let seconds = (ContinuousClock.now - request.startedAt).inSeconds
        let labels = HTTPServer.labels(request)
        requestMetrics.record(route: labels.route, method: labels.method, status: labels.status, seconds: seconds)
        // The line's fields only when it is written: not built for every request of a process logging less.
        guard Logger.writes(.info) else { return }
        logger.info("request", HTTPServer.logFields(request, seconds: seconds, termination: termination))
    }

    /// What the request is counted and logged by: its route template ("unmatched" without one), method and
    /// status ("none" before one was set).
    static func labels(_ request: RequestContext) -> (route: String, method: String, status: String) {
        (request.route ?? "unmatched", methodLabel(request.method), request.status.map(String.init) ?? "none")
    }

    /// The request's log line: method, route template, status, duration, request id, the outcome when
    /// abnormal, and the handler's `logMetadata` (which cannot override these). No headers, no body,
    /// no path: keys and ids live there.
    static func logFields(
        _ request: RequestContext, seconds: Double, termination: MHD_RequestTerminationCode
    ) -> [String: String] {
        let labels = labels(request)
        var fields = [
            "http.method": labels.method, "http.route": labels.route, "http.status": labels.status,
            "http.duration_ms": milliseconds(seconds), "http.request_id": request.requestID,
        ]
        if termination != .REQUEST_TERMINATED_COMPLETED_OK {
            fields["http.outcome"] = outcome(termination)
        }
        if !request.logMetadata.isEmpty {
            fields.merge(request.logMetadata) { ours, _ in ours }
        }
        return fields
    }

    private func tooLarge() -> HTTPResponse {
        .error(
            status: 413, code: "payload_too_large",
            message: "The request body is larger than \(configuration.maxBodyBytes) bytes.")
    }

    private func headerValue(_ connection: OpaquePointer, _ name: String) -> String? {
        MHD_lookup_connection_value(connection, .HEADER_KIND, name).map { String(cString: $0) }
    }

    /// The values of every `Content-Length` field, in order (names compared in C: no String per header).
    private func contentLengths(_ connection: OpaquePointer) -> [String] {
        final class Collector {
            var values: [String] = []
        }
        let collector = Collector()
        withExtendedLifetime(collector) {
            _ = MHD_get_connection_values(
                connection, .HEADER_KIND,
                { context, _, key, value in
                    guard let context, let key, strcasecmp(key, "Content-Length") == 0 else { return .YES }
                    let collector = Unmanaged<Collector>.fromOpaque(context).takeUnretainedValue()
                    collector.values.append(value.map { String(cString: $0) } ?? "")
                    return .YES
                }, Unmanaged.passUnretained(collector).toOpaque())
        }
        return collector.values
    }

    private func headers(_ connection: OpaquePointer) -> HTTPHeaders {
        final class Collector {
            var headers = HTTPHeaders()
        }
        let collector = Collector()
        withExtendedLifetime(collector) {
            _ = MHD_get_connection_values(
                connection, .HEADER_KIND,
                { context, _, key, value in
                    guard let context, let key else { return .YES }
                    let collector = Unmanaged<Collector>.fromOpaque(context).takeUnretainedValue()
                    collector.headers.add(name: String(cString: key), value: value.map { String(cString: $0) } ?? "")
                    return .YES
                }, Unmanaged.passUnretained(collector).toOpaque())
        }
        return collector.headers
    }

    /// The query items, percent-decoded; nil when one does not decode.
    private func queryItems(_ connection: OpaquePointer) -> [HTTPQueryItem]? {
        final class Collector {
            var items: [HTTPQueryItem] = []
            var broken = false
        }
        let collector = Collector()
        withExtendedLifetime(collector) {
            _ = MHD_get_connection_values(
                connection, .GET_ARGUMENT_KIND,
                { context, _, key, value in
                    guard let context, let key else { return .YES }
                    let collector = Unmanaged<Collector>.fromOpaque(context).takeUnretainedValue()
                    guard let name = PercentDecoding.decode(Substring(String(cString: key))) else {
                        collector.broken = true
                        return .NO
                    }
                    var decoded: String?
                    if let value {
                        guard let text = PercentDecoding.decode(Substring(String(cString: value))) else {
                            collector.broken = true
                            return .NO
                        }
                        decoded = text
                    }
                    collector.items.append(HTTPQueryItem(name: name, value: decoded))
                    return .YES
                }, Unmanaged.passUnretained(collector).toOpaque())
        }
        return collector.broken ? nil : collector.items
    }

    private func remoteAddress(_ connection: OpaquePointer) -> String? {
        guard let address = lv_mhd_client_address(connection) else { return nil }
        var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN) + 1)
        switch Int32(address.pointee.sa_family) {
        case AF_INET:
            return address.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { sin in
                var host = sin.pointee.sin_addr
                guard inet_ntop(AF_INET, &host, &text, socklen_t(text.count)) != nil else { return nil }
                return "\(HTTPServer.string(text)):\(UInt16(bigEndian: sin.pointee.sin_port))"
            }
        case AF_INET6:
            return address.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { sin6 in
                var host = sin6.pointee.sin6_addr
                guard inet_ntop(AF_INET6, &host, &text, socklen_t(text.count)) != nil else { return nil }
                return "[\(HTTPServer.string(text))]:\(UInt16(bigEndian: sin6.pointee.sin6_port))"
            }
        default:
            return nil
        }
    }

    /// `0.123` style milliseconds with three decimals, without `String(format:)`'s cost.
    static func milliseconds(_ seconds: Double) -> String {
        let micros = Int((seconds * 1_000_000).rounded())
        let fraction = String(micros % 1000)
        return "\(micros / 1000).\(String(repeating: "0", count: 3 - fraction.count))\(fraction)"
    }

    /// A NUL-terminated buffer filled by C, as a String.
    static func string(_ buffer: [CChar]) -> String {
        String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// Known methods keep their name in metrics; anything a client invents is `other`.
    static func methodLabel(_ method: String) -> String {
        switch method {
        case "GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS": method
        default: "other"
        }
    }

    static func outcome(_ termination: MHD_RequestTerminationCode) -> String {
        switch termination {
        case .REQUEST_TERMINATED_COMPLETED_OK: "ok"
        case .REQUEST_TERMINATED_WITH_ERROR: "error"
        case .REQUEST_TERMINATED_TIMEOUT_REACHED: "idle_timeout"
        case .REQUEST_TERMINATED_DAEMON_SHUTDOWN: "shutdown"
        case .REQUEST_TERMINATED_READ_ERROR: "read_error"
        case .REQUEST_TERMINATED_CLIENT_ABORT: "client_abort"
        @unknown default: "unknown"
        }
    }
}
