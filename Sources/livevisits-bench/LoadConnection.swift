import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// One keep-alive HTTP/1.1 connection on a blocking loopback socket: the pipeline benchmark's load
/// generator (one thread per connection, as wrk's connections are, at a few µs of CPU per request), which
/// notes when each request went out so the delay to APNs's acknowledgement can be measured per event.
/// An answer's body is its `Content-Length` (libmicrohttpd sends one with every body).
final class LoadConnection {
    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    private let fd: Int32
    private var pending: [UInt8] = []
    private var chunk = [UInt8](repeating: 0, count: 65_536)

    init(port: UInt16) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw Failure(description: "socket: \(String(cString: strerror(errno)))") }
        var one: Int32 = 1
        setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard connected == 0 else {
            let message = String(cString: strerror(errno))
            close(fd)
            throw Failure(description: "connect to 127.0.0.1:\(port): \(message)")
        }
    }

    deinit { close(fd) }

    /// A request's bytes: `method path`, the bearer key, a JSON body.
    static func request(_ method: String, _ path: String, key: String, body: String?) -> [UInt8] {
        var head = "\(method) \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer \(key)\r\n"
        if let body {
            head += "Content-Type: application/json\r\nContent-Length: \(body.utf8.count)\r\n\r\n\(body)"
        } else {
            head += "\r\n"
        }
        return Array(head.utf8)
    }

    /// Sends one request and reads its answer: (status, body).
    func exchange(_ request: [UInt8]) throws -> (status: Int, body: [UInt8]) {
        try request.withUnsafeBytes { raw in
            var sent = 0
            while sent < raw.count {
                let n = write(fd, raw.baseAddress! + sent, raw.count - sent)
                guard n > 0 else { throw Failure(description: "write: \(String(cString: strerror(errno)))") }
                sent += n
            }
        }
        var headerEnd: Int?
        while true {
            if headerEnd == nil { headerEnd = Self.endOfHeaders(pending) }
            if let end = headerEnd, let (status, length) = Self.statusAndLength(pending[..<end]) {
                if pending.count >= end + length {
                    let body = Array(pending[end..<(end + length)])
                    pending.removeFirst(end + length)
                    return (status, body)
                }
            } else if headerEnd != nil {
                throw Failure(description: "an answer without a status line")
            }
            let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress!, $0.count) }
            guard n > 0 else { throw Failure(description: n == 0 ? "connection closed" : String(cString: strerror(errno))) }
            pending.append(contentsOf: chunk[0..<n])
        }
    }

    /// The index just past `\r\n\r\n`.
    private static func endOfHeaders(_ bytes: [UInt8]) -> Int? {
        guard bytes.count >= 4 else { return nil }
        for i in 3..<bytes.count where bytes[i] == 10 && bytes[i - 1] == 13 && bytes[i - 2] == 10 && bytes[i - 3] == 13 {
            return i + 1
        }
        return nil
    }

    /// The status code and `Content-Length` of an answer's head, read on its bytes (this runs once per
    /// request on every load thread: as `String` splitting it was a third of the load generator's CPU).
    private static func statusAndLength(_ head: ArraySlice<UInt8>) -> (Int, Int)? {
        // "HTTP/1.1 201 Created\r\n…": the code is the three digits after the first space.
        guard let space = head.firstIndex(of: UInt8(ascii: " ")), space + 3 < head.endIndex,
            let status = digits(head[(space + 1)..<(space + 4)])
        else { return nil }
        let name = Array("\r\ncontent-length:".utf8)
        var i = space
        while i + name.count <= head.endIndex {
            if zip(head[i..<(i + name.count)], name).allSatisfy({ asciiLowercase($0) == $1 }) {
                var start = i + name.count
                while start < head.endIndex, head[start] == UInt8(ascii: " ") { start += 1 }
                var end = start
                while end < head.endIndex, head[end] >= UInt8(ascii: "0"), head[end] <= UInt8(ascii: "9") { end += 1 }
                return digits(head[start..<end]).map { (status, $0) }
            }
            i += 1
        }
        // No body without a length: 204, 304 (the server always sends one otherwise).
        return (status, 0)
    }

    /// A run of ASCII digits as a number; nil when empty or anything else.
    private static func digits(_ bytes: ArraySlice<UInt8>) -> Int? {
        guard !bytes.isEmpty else { return nil }
        var value = 0
        for b in bytes {
            guard b >= UInt8(ascii: "0"), b <= UInt8(ascii: "9") else { return nil }
            value = value * 10 + Int(b - UInt8(ascii: "0"))
        }
        return value
    }

    private static func asciiLowercase(_ b: UInt8) -> UInt8 {
        b >= UInt8(ascii: "A") && b <= UInt8(ascii: "Z") ? b + 32 : b
    }

    /// Wall-clock seconds since 1970 (the simulator's `receivedAt` is on the same clock).
    static func now() -> Double {
        var t = timespec()
        clock_gettime(CLOCK_REALTIME, &t)
        return Double(t.tv_sec) + Double(t.tv_nsec) / 1e9
    }

    /// Runs `connections` threads, each with its own connection and its own `work` (given the connection
    /// and its index), and returns what each returned, in order.
    static func drive<T: Sendable>(
        port: UInt16, connections: Int, _ work: @escaping @Sendable (LoadConnection, Int) throws -> T
    ) async throws -> [T] {
        let results = ResultSlots<T>(count: connections)
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let group = DispatchGroup()
            for index in 0..<connections {
                group.enter()
                let thread = Thread {
                    defer { group.leave() }
                    results.set(index, Result { try work(try LoadConnection(port: port), index) })
                }
                thread.stackSize = 1 << 20
                thread.start()
            }
            group.notify(queue: .global()) { continuation.resume() }
        }
        return try results.values()
    }
}

/// One slot per load thread.
private final class ResultSlots<T: Sendable>: @unchecked Sendable {
    private let lock = NSLock()
    private var slots: [Result<T, any Error>?]

    init(count: Int) { slots = Array(repeating: nil, count: count) }

    func set(_ index: Int, _ result: Result<T, any Error>) {
        lock.lock()
        slots[index] = result
        lock.unlock()
    }

    func values() throws -> [T] {
        lock.lock()
        defer { lock.unlock() }
        return try slots.map { try $0!.get() }
    }
}
