import Foundation
import HTTPServer
import Runtime
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// `livevisits-bench slow-clients`: a well-behaved client's latency with and without many trickling
/// connections. The HTTPServer target alone serves a `/healthz` route with the product's limits
/// (connections, per address, the whole-request deadline); the good client opens a connection per request,
/// as a load balancer's probe does, and its p50/p99 are measured first alone, then while `--trickling`
/// sockets (from several loopback addresses, under the per-address limit) each send one header byte every
/// `--interval-ms` and reconnect whenever the server drops them.
struct SlowClientsBenchmark {
    static let summary = "a good client's p99 with and without N trickling connections (see --help)"

    static let syntax = CommandSyntax(
        command: "livevisits-bench slow-clients",
        summary: summary,
        options: [
            .value("--trickling", "N", "trickling connections (default 1000)"),
            .value("--seconds", "N", "seconds per measurement; the good client sends one request after another (default 30)"),
            .value("--interval-ms", "N", "milliseconds between two bytes of one trickling connection (default 5000)"),
            .value("--max-connections", "N", "the server's connection limit (default 1024, as serve's)"),
            .value("--receive-timeout", "S", "the whole-request deadline in seconds (default 10, as serve's)"),
        ])

    var trickling = 1000
    var seconds = 30
    var intervalMilliseconds = 5000
    var maxConnections = 1024
    var receiveTimeout = 10

    init(arguments: [String]) throws {
        let parsed = try Self.syntax.parse(arguments)
        trickling = try parsed.integer("--trickling", in: 1...100_000) ?? trickling
        seconds = try parsed.integer("--seconds", in: 1...3600) ?? seconds
        intervalMilliseconds = try parsed.integer("--interval-ms", in: 1...600_000) ?? intervalMilliseconds
        maxConnections = try parsed.integer("--max-connections", in: 1...1_000_000) ?? maxConnections
        receiveTimeout = try parsed.integer("--receive-timeout", in: 1...3600) ?? receiveTimeout
    }

    func run() async throws {
        try raiseOpenFilesLimit(to: 2 * (trickling + maxConnections) + 1024)
        var router = Router()
        router.add(.get, "/healthz") { _, _ in .json(body: Data(#"{"ok":true}"#.utf8)) }
        var configuration = HTTPServerConfiguration(listenAddress: ListenAddress(host: "127.0.0.1", port: 0))
        configuration.connectionLimit = maxConnections
        configuration.requestReceiveTimeout = Double(receiveTimeout)
        configuration.threadCount = max(1, ProcessInfo.processInfo.activeProcessorCount / 2)
        let server = try HTTPServer(configuration: configuration, logger: Logger(label: "bench-http"), handler: router.handler)
        let serving = Task { try await server.run() }
        defer { serving.cancel() }
        let port = server.address.port

        let alone = try await Self.offThread { [seconds] in try GoodClient.measure(port: port, seconds: seconds) }
        let load = try TricklingConnections(port: port, count: trickling, intervalMilliseconds: intervalMilliseconds)
        // Until every trickler is connected (or the server is full), bounded.
        let settled = ContinuousClock.now + .seconds(30)
        while server.openConnections < min(trickling, maxConnections), ContinuousClock.now < settled {
            try await Task.sleep(for: .milliseconds(100))
        }
        let held = server.openConnections
        let loaded = try await Self.offThread { [seconds] in try GoodClient.measure(port: port, seconds: seconds) }
        let trickled = load.stop()

        print(
            "slow-clients: \(trickling) trickling connections (a byte every \(intervalMilliseconds) ms, reconnecting), "
                + "server limit \(maxConnections), per address \(configuration.perAddressConnectionLimit), "
                + "whole-request deadline \(receiveTimeout) s; \(held) open when measuring; \(seconds) s each")
        print("                     requests    p50 ms    p99 ms    max ms   failed")
        for (label, figures) in [("alone", alone), ("with tricklers", loaded)] {
            print(
                label.padding(toLength: 20, withPad: " ", startingAt: 0)
                    + String(
                        format: " %8d  %8.2f  %8.2f  %8.2f  %7d", figures.answered, figures.p50, figures.p99, figures.max,
                        figures.failed))
        }
        print(String(format: "p99 ratio (with / alone): %.2f", loaded.p99 / alone.p99))
        print("trickling: \(trickled.bytes) bytes sent, \(trickled.reconnects) reconnects after the server dropped one")
    }

    static func offThread<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            Thread.detachNewThread { continuation.resume(with: Result { try work() }) }
        }
    }

    func raiseOpenFilesLimit(to needed: Int) throws {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return }
        if limit.rlim_cur == rlim_t.max || limit.rlim_cur >= rlim_t(needed) { return }
        limit.rlim_cur = limit.rlim_max == rlim_t.max ? rlim_t(needed) : min(limit.rlim_max, rlim_t(needed))
        _ = setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
        guard limit.rlim_cur >= rlim_t(needed) else {
            throw BenchmarkUsageError(message: "needs \(needed) open files; the hard limit is \(limit.rlim_max) (ulimit -Hn)")
        }
    }
}

/// A client that does one `GET /healthz` per fresh connection, one after the other for a while, and times each.
enum GoodClient {
    struct Figures: Sendable {
        var p50: Double
        var p99: Double
        var max: Double
        var answered: Int
        var failed: Int
    }

    static func measure(port: UInt16, seconds: Int) throws -> Figures {
        var milliseconds: [Double] = []
        var failed = 0
        let request = Array("GET /healthz HTTP/1.1\r\nHost: bench\r\nConnection: close\r\n\r\n".utf8)
        var buffer = [UInt8](repeating: 0, count: 4096)
        let end = ContinuousClock.now + .seconds(seconds)
        while ContinuousClock.now < end {
            let start = ContinuousClock.now
            let fd = try SocketAddress.connect(port: port, source: nil, blocking: true)
            var timeout = timeval(tv_sec: 60, tv_usec: 0)
            setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
            var answered = false
            if request.withUnsafeBytes({ send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }) == request.count {
                var received: [UInt8] = []
                while true {
                    let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
                    if count <= 0 { break }
                    received += buffer[0..<count]
                }
                answered = received.starts(with: Array("HTTP/1.1 200".utf8))
            }
            close(fd)
            if answered {
                milliseconds.append((ContinuousClock.now - start).inSeconds * 1000)
            } else {
                failed += 1
            }
        }
        milliseconds.sort()
        func percentile(_ p: Double) -> Double {
            milliseconds.isEmpty ? .nan : milliseconds[min(milliseconds.count - 1, Int(Double(milliseconds.count) * p))]
        }
        return Figures(
            p50: percentile(0.5), p99: percentile(0.99), max: milliseconds.last ?? .nan, answered: milliseconds.count,
            failed: failed)
    }
}

/// Sockets that each send a request line, then one header byte every interval, from one thread with
/// `poll`; one the server closes is opened again at once (an attacker keeps its pressure up).
final class TricklingConnections: @unchecked Sendable {
    // @unchecked Sendable: the sockets are the loop thread's alone; the other thread only signals `stopping`
    // and waits on `finished`, and reads the counters after it.
    private struct Trickler {
        var fd: Int32
        var source: String
        var sentLine = false
        var due: ContinuousClock.Instant
    }

    private let port: UInt16
    private let interval: Duration
    private var tricklers: [Trickler] = []
    private let stopping = Mutex(false)
    private let finished = DispatchSemaphore(value: 0)
    private var bytes = 0
    private var reconnects = 0

    init(port: UInt16, count: Int, intervalMilliseconds: Int) throws {
        self.port = port
        self.interval = .milliseconds(intervalMilliseconds)
        let now = ContinuousClock.now
        for index in 0..<count {
            // 100 per loopback address, under the per-address limit.
            let source = "127.0.1.\(1 + index / 100)"
            let fd = try SocketAddress.connect(port: port, source: source, blocking: false)
            // Spread the bytes over the interval.
            tricklers.append(Trickler(fd: fd, source: source, due: now + interval * (Double(index) / Double(count))))
        }
        Thread.detachNewThread { [self] in loop() }
    }

    /// Stops the load, closes the sockets and returns what was sent.
    func stop() -> (bytes: Int, reconnects: Int) {
        stopping.withLock { $0 = true }
        finished.wait()
        return (bytes, reconnects)
    }

    private func loop() {
        let line = Array("GET /healthz HTTP/1.1\r\nHost: bench\r\nX-Pad: ".utf8)
        var polled = [pollfd](repeating: pollfd(), count: tricklers.count)
        var scratch = [UInt8](repeating: 0, count: 4096)
        while !stopping.withLock({ $0 }) {
            for index in tricklers.indices {
                polled[index] = pollfd(fd: tricklers[index].fd, events: Int16(POLLIN), revents: 0)
            }
            _ = poll(&polled, nfds_t(polled.count), 50)
            let now = ContinuousClock.now
            for index in tricklers.indices {
                var closed =
                    polled[index].revents & Int16(POLLIN | POLLHUP | POLLERR) != 0
                    && scratch.withUnsafeMutableBytes { recv(tricklers[index].fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
                        <= 0
                if !closed, tricklers[index].due <= now {
                    let piece = tricklers[index].sentLine ? Array("a".utf8) : line
                    let sent = piece.withUnsafeBytes {
                        send(tricklers[index].fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL | MSG_DONTWAIT))
                    }
                    if sent > 0 {
                        bytes += sent
                        tricklers[index].sentLine = true
                        tricklers[index].due = now + interval
                    } else if errno != EAGAIN, errno != ENOTCONN, errno != EWOULDBLOCK {
                        closed = true
                    } else {
                        tricklers[index].due = now + .milliseconds(50)
                    }
                }
                if closed {
                    close(tricklers[index].fd)
                    reconnects += 1
                    let fd = (try? SocketAddress.connect(port: port, source: tricklers[index].source, blocking: false)) ?? -1
                    tricklers[index] = Trickler(fd: fd, source: tricklers[index].source, due: now)
                }
            }
        }
        for trickler in tricklers where trickler.fd >= 0 { close(trickler.fd) }
        finished.signal()
    }
}

/// A TCP connection to the loopback server, optionally from a given loopback source address.
enum SocketAddress {
    static func connect(port: UInt16, source: String?, blocking: Bool) throws -> Int32 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw BenchmarkUsageError(message: "socket: \(String(cString: strerror(errno)))") }
        if !blocking { _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) }
        if let source {
            var local = sockaddr_in()
            local.sin_family = sa_family_t(AF_INET)
            local.sin_addr.s_addr = inet_addr(source)
            let bound = withUnsafePointer(to: &local) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            guard bound == 0 else {
                close(fd)
                throw BenchmarkUsageError(message: "bind to \(source): \(String(cString: strerror(errno)))")
            }
        }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard connected == 0 || (!blocking && errno == EINPROGRESS) else {
            let message = String(cString: strerror(errno))
            close(fd)
            throw BenchmarkUsageError(message: "connect to 127.0.0.1:\(port): \(message)")
        }
        return fd
    }
}
