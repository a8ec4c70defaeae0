import Foundation
import HTTPServer

#if canImport(Glibc)
    import Glibc
#endif

/// A blocking HTTP/1.1 client over a raw POSIX socket, for the cases a polite client cannot make
/// (lying lengths, trickled headers, garbage). Use it from `offPool` only: it blocks its thread.
final class RawClient: @unchecked Sendable {
    // @unchecked Sendable: each test drives one client from one thread at a time (through offPool).
    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    struct Response: Sendable {
        var status: Int
        var headers: HTTPHeaders
        var body: [UInt8]
        var text: String { String(decoding: body, as: UTF8.self) }
        var json: [String: Any]? { (try? JSONSerialization.jsonObject(with: Data(body))) as? [String: Any] }
        var errorCode: String? { (json?["error"] as? [String: Any])?["code"] as? String }
    }

    private let fd: Int32
    private var buffer: [UInt8] = []

    /// Connects to `host:port`; from `source` (an IPv4 address of this machine, any of 127.0.0.0/8 on
    /// loopback) when given, so that one test can be many clients to per-address limits.
    init(port: UInt16, host: String = "127.0.0.1", source: String? = nil, receiveTimeout: Int = 20) throws {
        // The descriptor is made and connected before `self` exists: a throwing init that has set
        // every property still runs deinit, which would close the descriptor a second time.
        fd = try RawClient.connected(host: host, port: port, source: source, receiveTimeout: receiveTimeout)
    }

    private static func connected(host: String, port: UInt16, source: String?, receiveTimeout: Int) throws -> Int32 {
        let v6 = host.contains(":")
        let fd = socket(v6 ? AF_INET6 : AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw Failure(description: "socket failed: errno \(errno)") }
        var timeout = timeval(tv_sec: receiveTimeout, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        if let source, !v6 {
            var local = sockaddr_in()
            local.sin_family = sa_family_t(AF_INET)
            inet_pton(AF_INET, source, &local.sin_addr)
            let bound = withUnsafePointer(to: &local) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            guard bound == 0 else {
                let code = errno
                Glibc.close(fd)
                throw Failure(description: "bind to \(source) failed: errno \(code)")
            }
        }
        let result: Int32
        if v6 {
            var address = sockaddr_in6()
            address.sin6_family = sa_family_t(AF_INET6)
            address.sin6_port = port.bigEndian
            inet_pton(AF_INET6, host, &address.sin6_addr)
            result = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in6>.size))
                }
            }
        } else {
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = port.bigEndian
            inet_pton(AF_INET, host, &address.sin_addr)
            result = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
        }
        guard result == 0 else {
            let code = errno
            Glibc.close(fd)
            throw Failure(description: "connect failed: errno \(code)")
        }
        return fd
    }

    deinit { Glibc.close(fd) }

    func send(_ text: String) throws { try send(Array(text.utf8)) }

    func send(_ bytes: [UInt8]) throws {
        var offset = 0
        while offset < bytes.count {
            let written = bytes[offset...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard written > 0 else { throw Failure(description: "send failed: errno \(errno)") }
            offset += written
        }
    }

    /// Reads more bytes; false at end of stream (or reset).
    private func fill() throws -> Bool {
        var chunk = [UInt8](repeating: 0, count: 16384)
        let count = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        if count > 0 {
            buffer.append(contentsOf: chunk[0..<count])
            return true
        }
        if count == 0 || errno == ECONNRESET { return false }
        throw Failure(description: "recv failed: errno \(errno)")
    }

    /// Reads one response (its body by Content-Length; none for HEAD, 204 and 304).
    func readResponse(head: Bool = false) throws -> Response {
        var end: Int?
        while end == nil {
            end = find([13, 10, 13, 10])
            if end == nil, try !fill() { throw Failure(description: "connection closed before a response") }
        }
        let headText = String(decoding: buffer[0..<end!], as: UTF8.self)
        buffer.removeFirst(end! + 4)
        var lines = headText.components(separatedBy: "\r\n")
        let statusLine = lines.removeFirst().split(separator: " ")
        guard statusLine.count >= 2, let status = Int(statusLine[1]) else {
            throw Failure(description: "bad status line")
        }
        var headers = HTTPHeaders()
        for line in lines {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers.add(
                name: String(line[..<colon]), value: line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces))
        }
        var length = Int(headers["Content-Length"] ?? "0") ?? 0
        if head || status == 204 || status == 304 { length = 0 }
        while buffer.count < length {
            if try !fill() { throw Failure(description: "connection closed inside a body") }
        }
        let body = Array(buffer[0..<length])
        buffer.removeFirst(length)
        return Response(status: status, headers: headers, body: body)
    }

    /// Whether the server closed the connection (reads to the end, discarding anything sent).
    func isClosedByServer() throws -> Bool {
        while try fill() { buffer.removeAll() }
        return true
    }

    /// True when nothing arrives within `milliseconds` (the connection is open but unanswered).
    func staysSilent(milliseconds: Int) throws -> Bool {
        var short = timeval(tv_sec: milliseconds / 1000, tv_usec: (milliseconds % 1000) * 1000)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &short, socklen_t(MemoryLayout<timeval>.size))
        defer {
            var normal = timeval(tv_sec: 20, tv_usec: 0)
            setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &normal, socklen_t(MemoryLayout<timeval>.size))
        }
        var chunk = [UInt8](repeating: 0, count: 4096)
        let count = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        if count > 0 { buffer.append(contentsOf: chunk[0..<count]) }
        return count < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)
    }

    private func find(_ pattern: [UInt8]) -> Int? {
        guard buffer.count >= pattern.count else { return nil }
        for i in 0...(buffer.count - pattern.count) where buffer[i] == pattern[0] {
            if Array(buffer[i..<(i + pattern.count)]) == pattern { return i }
        }
        return nil
    }
}

/// Runs blocking work on a thread of its own, so the two threads of Swift's cooperative pool stay
/// free for the server's handler tasks.
func offPool<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        Thread.detachNewThread { continuation.resume(with: Result { try work() }) }
    }
}

/// One request on a fresh connection.
func exchange(_ port: UInt16, _ request: String, head: Bool = false) async throws -> RawClient.Response {
    try await offPool {
        let client = try RawClient(port: port)
        try client.send(request)
        return try client.readResponse(head: head)
    }
}

/// `GET path` on a fresh connection.
func get(_ port: UInt16, _ path: String, headers: String = "") async throws -> RawClient.Response {
    try await exchange(port, "GET \(path) HTTP/1.1\r\nHost: test\r\n\(headers)Connection: close\r\n\r\n")
}
