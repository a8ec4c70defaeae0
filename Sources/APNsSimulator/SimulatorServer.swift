import Foundation
import Runtime

#if canImport(Glibc)
    import Glibc
#endif

/// The listening socket, its accept thread, and one thread per connection. `stop()` closes
/// everything and resumes its caller once every thread has ended.
final class SimulatorServer: Sendable {
    private struct Registry {
        var connections: [Int: HTTP2Connection] = [:]
        var acceptLoopRunning = false
        var stopping = false
        var waiters: [CheckedContinuation<Void, Never>] = []
    }

    let port: UInt16
    private let listenFD: Int32
    private let wakeRead: Int32
    private let wakeWrite: Int32
    private let core: SimulatorCore
    private let tls: TLSContext
    private let registry = Lock(Registry())
    private let listener: SimulatorListener

    init(
        host: String, port: UInt16, core: SimulatorCore, tls: TLSContext, listener: SimulatorListener = .pushes
    ) throws(SimulatorError) {
        self.listener = listener
        let address = host == "localhost" ? "127.0.0.1" : host
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_port = port.bigEndian
        guard inet_pton(AF_INET, address, &addr.sin_addr) == 1 else {
            throw SimulatorError(.socket, "cannot listen on \(host): only IPv4 addresses are supported")
        }
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw SimulatorError(.socket, "cannot create a socket") }
        WakePipe.configure(fd, nonBlocking: true)
        var one: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        let bound = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0, listen(fd, 1024) == 0 else {
            let reason = String(cString: strerror(errno))
            close(fd)
            throw SimulatorError(.socket, "cannot listen on \(host):\(port): \(reason)")
        }
        var actual = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &actual) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        guard let pipeFDs = WakePipe.make() else {
            close(fd)
            throw SimulatorError(.socket, "cannot create a wake-up pipe")
        }
        self.port = UInt16(bigEndian: actual.sin_port)
        listenFD = fd
        wakeRead = pipeFDs.0
        wakeWrite = pipeFDs.1
        self.core = core
        self.tls = tls
    }

    /// Starts the accept thread.
    func start() {
        registry.withLock { $0.acceptLoopRunning = true }
        let thread = Thread { [self] in acceptLoop() }
        thread.name = "apns-sim accept"
        thread.start()
    }

    private func acceptLoop() {
        while !registry.withLock({ $0.stopping }) {
            var fds = [
                pollfd(fd: listenFD, events: Int16(POLLIN), revents: 0), pollfd(fd: wakeRead, events: Int16(POLLIN), revents: 0),
            ]
            let ready = poll(&fds, 2, 1000)
            if ready <= 0 || fds[0].revents & Int16(POLLIN) == 0 { continue }
            let client = accept(listenFD, nil, nil)
            guard client >= 0 else {
                // Out of descriptors: back off instead of spinning on a listener that stays readable.
                if errno == EMFILE || errno == ENFILE { usleep(10_000) }
                continue
            }
            WakePipe.configure(client, nonBlocking: true)
            var one: Int32 = 1
            setsockopt(client, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
            let id = core.connectionOpened()
            let connection: HTTP2Connection
            do {
                connection = try HTTP2Connection(id: id, fd: client, core: core, tls: tls, listener: listener)
            } catch {
                close(client)
                core.connectionClosed()
                continue
            }
            let admitted = registry.withLock { r -> Bool in
                guard !r.stopping else { return false }
                r.connections[id] = connection
                return true
            }
            guard admitted else {
                close(client)
                core.connectionClosed()
                break
            }
            let thread = Thread { [self] in
                connection.run()
                core.connectionClosed()
                finished(connection: id)
            }
            thread.name = "apns-sim connection \(id)"
            thread.start()
        }
        close(listenFD)
        finished(connection: nil)
    }

    private func finished(connection id: Int?) {
        let waiters = registry.withLock { r -> [CheckedContinuation<Void, Never>] in
            if let id { r.connections.removeValue(forKey: id) } else { r.acceptLoopRunning = false }
            guard r.stopping, r.connections.isEmpty, !r.acceptLoopRunning else { return [] }
            defer { r.waiters.removeAll() }
            return r.waiters
        }
        for waiter in waiters { waiter.resume() }
    }

    /// Closes the listener and every connection; returns when all their threads have ended.
    func stop() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let (connections, done) = registry.withLock { r -> ([HTTP2Connection], Bool) in
                r.stopping = true
                let done = r.connections.isEmpty && !r.acceptLoopRunning
                if !done { r.waiters.append(continuation) }
                return (Array(r.connections.values), done)
            }
            WakePipe.wake(wakeWrite)
            for connection in connections { connection.stop() }
            if done { continuation.resume() }
        }
    }

    deinit {
        close(wakeRead)
        close(wakeWrite)
    }
}
