import CEpoll
import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// One keep-alive HTTP/1.1 connection on a loopback socket: the pipeline benchmark's client. Blocking, one
/// thread per connection, for set-up (`drive`); non-blocking under `LoadLoop` for the measured load. An
/// answer's body is its `Content-Length` (libmicrohttpd sends one with every body).
final class LoadConnection {
    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    fileprivate private(set) var fd: Int32
    private let port: UInt16
    private var nonBlocking = false
    private var pending: [UInt8] = []
    private var chunk = [UInt8](repeating: 0, count: 65_536)

    init(port: UInt16) throws {
        self.port = port
        fd = try Self.connect(to: port)
    }

    /// A connection that opens its socket when its first request goes out, as a page opened later than the run
    /// began does (an open connection that sends nothing is dropped by the server after 10 s).
    init(lazilyTo port: UInt16) {
        self.port = port
        fd = -1
    }

    private static func connect(to port: UInt16) throws -> Int32 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw Failure(description: "socket: \(String(cString: strerror(errno)))") }
        var one: Int32 = 1
        setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard connected == 0 else {
            let message = String(cString: strerror(errno))
            close(fd)
            throw Failure(description: "connect to 127.0.0.1:\(port): \(message)")
        }
        return fd
    }

    deinit { if fd >= 0 { close(fd) } }

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
        try send(request)
        while true {
            if let answer = try takeAnswer() { return answer }
            _ = try readSome()
        }
    }

    /// Writes all of `request` (waiting for room on a non-blocking socket: a request is a few hundred bytes
    /// and the socket's buffer is empty between a closed loop's requests, so that wait is all but never).
    func send(_ request: [UInt8]) throws {
        if fd < 0 {
            fd = try Self.connect(to: port)
            if nonBlocking { makeNonBlocking() }
        }
        try request.withUnsafeBytes { raw in
            var sent = 0
            while sent < raw.count {
                let n = write(fd, raw.baseAddress! + sent, raw.count - sent)
                if n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) {
                    var room = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
                    _ = poll(&room, 1, 1000)
                    continue
                }
                guard n > 0 else { throw Failure(description: "write: \(String(cString: strerror(errno)))") }
                sent += n
            }
        }
    }

    /// The next whole answer already read, taken off the buffer; nil until one is complete.
    func takeAnswer() throws -> (status: Int, body: [UInt8])? {
        guard let end = Self.endOfHeaders(pending) else { return nil }
        guard let (status, length) = Self.statusAndLength(pending[..<end]) else {
            throw Failure(description: "an answer without a status line")
        }
        guard pending.count >= end + length else { return nil }
        let body = Array(pending[end..<(end + length)])
        pending.removeFirst(end + length)
        return (status, body)
    }

    /// One `read` into the buffer: false when a non-blocking socket has nothing now.
    func readSome() throws -> Bool {
        let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress!, $0.count) }
        if n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) { return false }
        guard n > 0 else { throw Failure(description: n == 0 ? "connection closed" : String(cString: strerror(errno))) }
        pending.append(contentsOf: chunk[0..<n])
        return true
    }

    /// Makes reads and writes return at once (`LoadLoop`).
    fileprivate func makeNonBlocking() {
        nonBlocking = true
        guard fd >= 0 else { return }
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
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

/// One client of a `LoadLoop`: its connection's requests, one at a time. Touched only by its loop's thread.
protocol LoadClient: AnyObject {
    /// The next request, or nil when this client is done (the time it is asked is the time it goes out).
    func next() -> [UInt8]?
    /// The answer to the request `next` gave last.
    func answered(status: Int, body: [UInt8])
    /// When the next request is to go (`LoadConnection.now()` seconds), for a client on a timer of its own such
    /// as a page polling every few seconds; nil: at once (closed loop, the default).
    var dueAt: Double? { get }
}

extension LoadClient {
    var dueAt: Double? { nil }
}

/// Closed-loop load as wrk makes it: a few threads, each driving many keep-alive connections through
/// epoll, each connection sending its next request as soon as its answer is in. (One thread per
/// connection cost the benchmark a context switch per request and per answer on the machine it measures.)
enum LoadLoop {
    /// Connects one connection per client, spreads them over `threads` loops, and runs until every client is
    /// done; the first failure stops all and is thrown.
    static func run(port: UInt16, clients: [any LoadClient], threads: Int = 2) async throws {
        try await run(connections: try clients.map { _ in try LoadConnection(port: port) }, clients: clients, threads: threads)
    }

    /// The same over connections already open, one per client (opened before the clock starts).
    static func run(connections opened: [LoadConnection], clients: [any LoadClient], threads: Int = 2) async throws {
        precondition(opened.count == clients.count)
        for c in opened { c.makeNonBlocking() }
        let loops = max(1, min(threads, clients.count))
        let shares = (0..<loops).map { k in Array(stride(from: k, to: clients.count, by: loops)) }
        let failure = FirstFailure()
        // Each client and its connection are touched by one loop's thread only.
        nonisolated(unsafe) let clients = clients
        nonisolated(unsafe) let connections = opened
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let group = DispatchGroup()
            for share in shares {
                group.enter()
                let thread = Thread {
                    defer { group.leave() }
                    do {
                        try loop(share.map { (connections[$0], clients[$0]) }, failure: failure)
                    } catch {
                        failure.set(error)
                    }
                }
                thread.stackSize = 1 << 20
                thread.start()
            }
            group.notify(queue: .global()) { continuation.resume() }
        }
        if let error = failure.error { throw error }
    }

    private static func loop(_ pairs: [(LoadConnection, any LoadClient)], failure: FirstFailure) throws {
        // epoll over this loop's share: a connection is watched while an answer is awaited and not while its
        // client waits for its due time or is done, so a wait costs only the connections that answered (poll(2)
        // over ten thousand pages' sockets cost this process a fifth of a core, taken from what it measures).
        let epoll = lv_epoll_create()
        guard epoll >= 0 else { throw LoadConnection.Failure(description: "epoll: \(String(cString: strerror(errno)))") }
        defer { close(epoll) }
        var watched = [Bool](repeating: false, count: pairs.count)
        var waiting = DueHeap()
        var open = pairs.count
        func watch(_ k: Int, _ on: Bool) throws {
            guard watched[k] != on else { return }
            let fd = pairs[k].0.fd
            let done = on ? lv_epoll_watch(epoll, fd, Int32(k)) : lv_epoll_unwatch(epoll, fd)
            guard done == 0 else { throw LoadConnection.Failure(description: "epoll_ctl: \(String(cString: strerror(errno)))") }
            watched[k] = on
        }
        /// Sends the client's next request now or when it is due; false when the client is done.
        func sendNext(_ k: Int) throws {
            let (connection, client) = pairs[k]
            if let due = client.dueAt, due > LoadConnection.now() {
                try watch(k, false)
                waiting.push(due, k)
            } else if let request = client.next() {
                try connection.send(request)
                try watch(k, true)
            } else {
                try watch(k, false)
                open -= 1
            }
        }
        for k in pairs.indices { try sendNext(k) }
        var ready = [Int32](repeating: 0, count: 256)
        while open > 0 && failure.error == nil {
            let now = LoadConnection.now()
            while let earliest = waiting.first, earliest.due <= now {
                waiting.pop()
                try sendNext(earliest.k)
            }
            let timeout = waiting.first.map { Int32(max(0, min(1000, ($0.due - now) * 1000))) } ?? 1000
            let n = lv_epoll_wait(epoll, &ready, Int32(ready.count), timeout)
            if n < 0 && errno == EINTR { continue }
            guard n >= 0 else { throw LoadConnection.Failure(description: "epoll_wait: \(String(cString: strerror(errno)))") }
            for k in ready.prefix(Int(n)).map({ Int($0) }) where watched[k] {
                let (connection, client) = pairs[k]
                while try connection.readSome() {}
                while let answer = try connection.takeAnswer() {
                    client.answered(status: answer.status, body: answer.body)
                    try sendNext(k)
                }
            }
        }
    }
}

/// The clients waiting for their due time, earliest first (a binary heap).
private struct DueHeap {
    private var items: [(due: Double, k: Int)] = []

    var first: (due: Double, k: Int)? { items.first }

    mutating func push(_ due: Double, _ k: Int) {
        items.append((due, k))
        var i = items.count - 1
        while i > 0 {
            let parent = (i - 1) / 2
            guard items[i].due < items[parent].due else { break }
            items.swapAt(i, parent)
            i = parent
        }
    }

    mutating func pop() {
        guard !items.isEmpty else { return }
        items.swapAt(0, items.count - 1)
        items.removeLast()
        var i = 0
        while true {
            let left = 2 * i + 1
            let right = left + 1
            var smallest = i
            if left < items.count && items[left].due < items[smallest].due { smallest = left }
            if right < items.count && items[right].due < items[smallest].due { smallest = right }
            guard smallest != i else { return }
            items.swapAt(i, smallest)
            i = smallest
        }
    }
}

/// The first error of any loop (the others then stop).
private final class FirstFailure: @unchecked Sendable {
    private let lock = NSLock()
    private var first: (any Error)?

    var error: (any Error)? {
        lock.lock()
        defer { lock.unlock() }
        return first
    }

    func set(_ error: any Error) {
        lock.lock()
        if first == nil { first = error }
        lock.unlock()
    }
}
