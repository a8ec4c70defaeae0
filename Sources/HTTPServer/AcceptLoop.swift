import CMicroHTTPD
import Foundation
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
/// At `connectionLimit` open connections nothing is accepted: new clients wait in the listen backlog until one
/// closes, as they do when libmicrohttpd accepts. The count is the loop's own — connections handed over, less
/// those whose close libmicrohttpd reported (`closed()`) — since libmicrohttpd reports a new connection only
/// once its thread has taken it up. The per-address limit stays libmicrohttpd's (it counts on the
/// pool's master). `stop()` refuses new connections at once; `waitUntilEnded()` blocks until the thread has
/// ended, after which the daemon may be stopped and the socket closed.
final class AcceptLoop: Sendable {
    private let listenFD: Int32
    private let daemon: DaemonHandle
    private let connectionLimit: Int
    private let open = Atomic<Int>(0)
    private let stopping = Atomic<Bool>(false)
    private let ended = DispatchSemaphore(value: 0)

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

    init(listening listenFD: Int32, daemon: DaemonHandle, connectionLimit: Int) {
        self.listenFD = listenFD
        self.daemon = daemon
        self.connectionLimit = connectionLimit
    }

    /// libmicrohttpd reported a connection closed (its close notification).
    func closed() {
        open.subtract(1, ordering: .relaxed)
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

    private func run() {
        var waiting = pollfd(fd: listenFD, events: Int16(POLLIN), revents: 0)
        while !stopping.load(ordering: .acquiring) {
            waiting.revents = 0
            guard poll(&waiting, 1, 100) > 0 else { continue }
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
            // Counted before it is handed over: its close may be reported before MHD_add_connection returns.
            // MHD closes the socket itself when it cannot take it (its per-address limit, for one), and then
            // reports no close.
            open.add(1, ordering: .relaxed)
            let added = withUnsafePointer(to: &storage) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    MHD_add_connection(daemon.daemon, client, $0, length)
                }
            }
            if added != .YES { open.subtract(1, ordering: .relaxed) }
        }
    }
}
