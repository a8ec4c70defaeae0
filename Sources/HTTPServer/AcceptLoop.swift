import CMicroHTTPD
import Foundation
import Runtime
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// Accepts the server's connections on a thread of its own and hands each to libmicrohttpd
/// (`MHD_add_connection`), which spreads them over its polling threads by socket number.
///
/// Why not let libmicrohttpd accept: with a thread pool, every thread waits on the listening socket and the
/// one already awake wins, so under load most connections land on the busiest thread. Each thread walks all of
/// its suspended connections whenever one of them resumes (libmicrohttpd 0.9), and every held request (an open
/// tracking page) keeps one suspended: ten thousand pages on one thread cost it a third of its time.
///
/// For the same walk, connections that hold requests are served apart (`Daemons.holding`): a connection whose
/// first request is a `GET` of a path under one of `holdingPrefixes` goes to a daemon of its own, so that the
/// ordinary requests' resumes (every request that waits on the database resumes once) walk only ordinary
/// connections. The loop reads nothing: it peeks at the first bytes, waiting up to `sortingSeconds` for them
/// (silent and slow clients go to the ordinary daemon, where the request deadline applies to them).
///
/// At `connectionLimit` open connections nothing is accepted: new clients wait in the listen backlog until one
/// closes, as they do when libmicrohttpd accepts. At `addressLimit` open connections from one address (0: no
/// limit), one more is accepted and closed at once. Both counts are the loop's own, over both daemons —
/// connections handed over, less those whose close libmicrohttpd reported (`closed(address:)`) — since
/// libmicrohttpd reports a new connection only once its thread has taken it up. `stop()` refuses new
/// connections at once; `waitUntilEnded()` blocks until the thread has ended, after which the daemons may be
/// stopped and the socket closed.
final class AcceptLoop: Sendable {
    private let listenFD: Int32
    private let daemons: Daemons
    private let connectionLimit: Int
    private let addressLimit: Int
    /// The first bytes of a request that goes to `daemons.holding`: `GET ` and one of the prefixes.
    private let holdingStarts: [[UInt8]]
    /// How many first bytes tell: the longest of `holdingStarts`.
    private let peekLength: Int
    private let open = Atomic<Int>(0)
    private let handedToHolding = Atomic<Int>(0)
    private let perAddress = Lock<[ClientAddress: Int]>([:])
    private let stopping = Atomic<Bool>(false)
    private let ended = DispatchSemaphore(value: 0)

    /// How long a new connection's first bytes are waited for before it goes to the ordinary daemon.
    static let sortingSeconds = 0.1

    /// Connections MHD may hold beyond `connectionLimit`: closed ones it has not cleaned up yet.
    static let cleanupSlack = 256

    /// The limit given to libmicrohttpd, which never refuses what this loop hands over.
    ///
    /// libmicrohttpd splits its limit evenly over its threads, and the socket number, not the load, picks a
    /// connection's thread: every connection may land on one thread. A thread that reaches its share while
    /// taking up a handed-over connection leaves a lock held in libmicrohttpd 0.9.75 and never polls again
    /// (the server hangs). So each thread's share is the whole `connectionLimit` plus `cleanupSlack`: MHD
    /// counts a closed connection until it has cleaned it up, a moment after our close notification.
    static func daemonConnectionLimit(connectionLimit: Int, threads: Int) -> UInt32 {
        let perThread = connectionLimit + cleanupSlack
        let (total, overflow) = perThread.multipliedReportingOverflow(by: max(threads, 1))
        return overflow || total > Int(UInt32.max) ? UInt32.max : UInt32(total)
    }

    init(listening listenFD: Int32, daemons: Daemons, connectionLimit: Int, addressLimit: Int, holdingPrefixes: [String]) {
        self.listenFD = listenFD
        self.daemons = daemons
        self.connectionLimit = connectionLimit
        self.addressLimit = addressLimit
        self.holdingStarts = daemons.holding == nil ? [] : holdingPrefixes.map { Array("GET \($0)".utf8) }
        self.peekLength = holdingStarts.map(\.count).max() ?? 0
    }

    /// Connections handed to the holding daemon so far.
    var holdingConnections: Int { handedToHolding.load(ordering: .relaxed) }

    /// libmicrohttpd reported a connection from `address` closed (its close notification).
    func closed(address: ClientAddress?) {
        open.subtract(1, ordering: .relaxed)
        if addressLimit > 0, let address { release(address) }
    }

    private func release(_ address: ClientAddress) {
        perAddress.withLock { counts in
            let left = (counts[address] ?? 1) - 1
            counts[address] = left > 0 ? left : nil
        }
    }

    /// Counts a new connection from `address`; false (nothing counted) when the address is at its limit.
    private func admit(_ address: ClientAddress?) -> Bool {
        guard addressLimit > 0, let address else { return true }
        return perAddress.withLock { counts in
            let now = counts[address] ?? 0
            guard now < addressLimit else { return false }
            counts[address] = now + 1
            return true
        }
    }

    func start() {
        let thread = Thread { [self] in
            run()
            ended.signal()
        }
        thread.name = "http-accept"
        thread.start()
    }

    /// Stops accepting: Linux refuses new connections on the socket from now on, and the thread ends within
    /// its next wait (at most 100 ms).
    func stop() {
        stopping.store(true, ordering: .releasing)
        _ = Glibc.shutdown(listenFD, Int32(SHUT_RDWR))
    }

    /// Blocks until the thread has ended (after `stop()`); call it once, off the cooperative pool.
    func waitUntilEnded() {
        ended.wait()
    }

    /// An accepted connection not handed over yet.
    private struct Accepted {
        let socket: Int32
        var storage: sockaddr_storage
        let length: socklen_t
        let address: ClientAddress?
        /// Until when its first bytes are waited for (`ContinuousClock`).
        let sortBy: ContinuousClock.Instant
    }

    private func run() {
        // Connections whose first bytes have not come yet (only with a holding daemon).
        var sorting: [Accepted] = []
        var waits: [pollfd] = []
        while !stopping.load(ordering: .acquiring) {
            waits.removeAll(keepingCapacity: true)
            waits.append(pollfd(fd: listenFD, events: Int16(POLLIN), revents: 0))
            for accepted in sorting { waits.append(pollfd(fd: accepted.socket, events: Int16(POLLIN), revents: 0)) }
            var timeout: Int32 = 100
            if let first = sorting.map(\.sortBy).min() {
                let left = (first - .now).inSeconds
                timeout = min(timeout, max(0, Int32((left * 1000).rounded(.up))))
            }
            guard poll(&waits, nfds_t(waits.count), timeout) >= 0 else { continue }
            if !sorting.isEmpty {
                let now = ContinuousClock.now
                var waiting: [Accepted] = []
                for (index, accepted) in sorting.enumerated() {
                    if waits[index + 1].revents != 0 || now >= accepted.sortBy {
                        handOver(accepted, to: daemon(for: accepted.socket) ?? daemons.general)
                    } else {
                        waiting.append(accepted)
                    }
                }
                sorting = waiting
            }
            guard waits[0].revents != 0 else { continue }
            // At the limit, clients wait in the backlog until a connection closes.
            if open.load(ordering: .relaxed) >= connectionLimit {
                usleep(5_000)
                continue
            }
            var storage = sockaddr_storage()
            var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
            let client = withUnsafeMutablePointer(to: &storage) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    accept(listenFD, $0, &length)
                }
            }
            guard client >= 0 else {
                // Out of descriptors or memory: back off briefly instead of spinning on a ready socket.
                if errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM { usleep(10_000) }
                continue
            }
            _ = fcntl(client, F_SETFD, FD_CLOEXEC)
            _ = fcntl(client, F_SETFL, fcntl(client, F_GETFL) | O_NONBLOCK)
            let address = ClientAddress(storage)
            guard admit(address) else {
                _ = Glibc.close(client)
                continue
            }
            // Counted before it is handed over: its close may be reported before MHD_add_connection returns.
            open.add(1, ordering: .relaxed)
            let accepted = Accepted(
                socket: client, storage: storage, length: length, address: address,
                sortBy: .now + .seconds(Self.sortingSeconds))
            if holdingStarts.isEmpty {
                handOver(accepted, to: daemons.general)
            } else if let daemon = daemon(for: client) {
                handOver(accepted, to: daemon)
            } else {
                sorting.append(accepted)
            }
        }
        for accepted in sorting { handOver(accepted, to: daemons.general) }
    }

    /// The daemon a connection goes to by its first bytes; nil while they have not come.
    private func daemon(for socket: Int32) -> DaemonHandle? {
        guard let holding = daemons.holding else { return daemons.general }
        var head = [UInt8](repeating: 0, count: peekLength)
        let count = recv(socket, &head, peekLength, Int32(MSG_PEEK))
        if count < 0, errno == EAGAIN || errno == EWOULDBLOCK { return nil }
        guard count > 0 else { return daemons.general }  // closed or failed: the ordinary daemon sees it
        let first = head.prefix(count)
        return holdingStarts.contains(where: { first.starts(with: $0) }) ? holding : daemons.general
    }

    /// Hands a counted connection to `daemon`. MHD closes the socket itself when it cannot take it, and then
    /// reports no close: the counts are given back here.
    private func handOver(_ accepted: Accepted, to daemon: DaemonHandle) {
        var storage = accepted.storage
        let added = withUnsafePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                MHD_add_connection(daemon.daemon, accepted.socket, $0, accepted.length)
            }
        }
        if added == .YES {
            if daemon !== daemons.general { handedToHolding.add(1, ordering: .relaxed) }
        } else {
            open.subtract(1, ordering: .relaxed)
            if addressLimit > 0, let address = accepted.address { release(address) }
        }
    }
}

/// The daemons a server runs: the ordinary one, and the one for connections that hold requests (when the
/// configuration names their paths).
struct Daemons: Sendable {
    let general: DaemonHandle
    let holding: DaemonHandle?

    var all: [DaemonHandle] { [general] + (holding.map { [$0] } ?? []) }
}

/// A client's address without its port: what the per-address limit counts by.
struct ClientAddress: Hashable, Sendable {
    let family: Int32
    let bytes: [UInt8]

    /// From an IPv4 or IPv6 socket address; nil for any other family.
    init?(_ address: UnsafePointer<sockaddr>) {
        switch Int32(address.pointee.sa_family) {
        case AF_INET:
            family = AF_INET
            bytes = address.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { sin in
                withUnsafeBytes(of: sin.pointee.sin_addr) { Array($0) }
            }
        case AF_INET6:
            family = AF_INET6
            bytes = address.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { sin6 in
                withUnsafeBytes(of: sin6.pointee.sin6_addr) { Array($0) }
            }
        default:
            return nil
        }
    }

    init?(_ storage: sockaddr_storage) {
        var storage = storage
        guard
            let address = withUnsafePointer(
                to: &storage, { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { ClientAddress($0) } })
        else { return nil }
        self = address
    }
}
