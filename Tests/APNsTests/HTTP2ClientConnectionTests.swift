import APNsSimulator
import COpenSSL
import Foundation
import Testing

@testable import APNs

#if canImport(Glibc)
    import Glibc
#endif

/// One connection (`HTTP2ClientConnection`) stepped by the test itself rather than by the transport's loop,
/// so that the order of its reads and writes is the test's to choose, against the project's simulator.
@Suite(.timeLimit(.minutes(2))) struct HTTP2ClientConnectionTests {
    /// The server answers a push with GOAWAY (naming no stream processed) and closes; the client writes
    /// its next pushes before it reads that GOAWAY, and the write fails. The GOAWAY still waits on the
    /// socket: every stream it names unprocessed must go to another connection, none fail as lost (which a
    /// worker would have to treat as perhaps delivered).
    @Test func aWriteFailingBeforeAnUnreadGoawayHandsItsUnprocessedStreamsOn() async throws {
        try await withSimulatedAPNs { apns in
            apns.simulator.dropConnection(afterRequests: 0, mode: .goaway)
            let trusted = try APNsTrustedCertificates(contentsOfFile: apns.endpoint.caFile)
            let settings = HTTP2ClientTransport.Settings(
                connectTimeoutMilliseconds: 5_000, keepAliveSeconds: 60, maximumIdleSeconds: 60,
                maximumConcurrentStreams: 100, trustedCertificates: trusted)
            let url = "\(apns.endpoint.url)/3/device/\(SimulatedAPNs.token(1))"
            let target = try #require(HTTP2Target(url: url))
            let exchange = HTTP2Exchange(
                url: url,
                headers: ["apns-push-type: liveactivity", "apns-topic: \(SimulatedAPNs.bundleId).push-type.liveactivity"],
                body: SimulatedAPNs.updateBody(), timeoutMilliseconds: 10_000)
            let tls = HTTP2ClientTransport.makeTLSContext(trusting: trusted)
            defer { SSL_CTX_free(tls) }
            let pushes = 4
            let results = await withCheckedContinuation { continuation in
                let batch = HTTP2ExchangeBatch(count: pushes, continuation: continuation)
                let now = HTTP2ClientStream.monotonicNanoseconds
                let streams = (0..<pushes).map {
                    HTTP2ClientStream(exchange: exchange, target: target, now: now(), batch: batch, index: $0)
                }
                let connection = HTTP2ClientConnection(target: target, settings: settings, tls: tls, now: now())
                defer {  // whatever happened, every push is finished, so the batch answers
                    for stream in streams where !stream.finished { stream.fail(.connectFailed, "not sent by the test") }
                }
                connection.resolved(HTTP2Resolver.system.resolve(target.host, target.port))
                connection.enqueue(streams[0])

                // Connect, and step as the transport's loop would until the first push is written.
                let connected = step(connection) {
                    streams[0].sent == exchange.body.count || connection.phase == .closed
                }
                guard connected, connection.phase == .open else {
                    Issue.record("the first push was never written (phase \(connection.phase))")
                    return
                }
                // Its answer is a GOAWAY and the server's close; wait for the close without reading.
                guard let (fd, _) = connection.pollEvents, wait(fd, for: Self.peerClosed) else {
                    Issue.record("the simulator did not close the connection")
                    return
                }
                // Write the next pushes until a write fails: the first may still reach the closed socket's
                // buffer (its answer is a reset), the next cannot.
                var enqueued = 1
                for stream in streams.dropFirst() where connection.phase != .closed {
                    connection.enqueue(stream)
                    enqueued += 1
                    connection.service(now: now())
                    if connection.phase != .closed { _ = wait(fd, for: 0) }  // the reset (POLLERR/POLLHUP)
                }
                #expect(connection.phase == .closed, "no write failed after the server closed")
                #expect(streams.allSatisfy { !$0.finished }, "a push failed instead of going to another connection")
                let handedOn = Set(connection.refused.map(ObjectIdentifier.init))
                #expect(handedOn == Set(streams.prefix(enqueued).map(ObjectIdentifier.init)))
                #expect(connection.refused.allSatisfy { $0.sent == 0 }, "a push handed on was not rewound")
            }
            for (index, result) in results.enumerated() {
                if case .failed(let failure) = result.outcome {
                    #expect(failure.message == "not sent by the test", "push \(index): \(failure)")
                } else {
                    Issue.record("push \(index) was answered: \(result.outcome)")
                }
            }
        }
    }

    /// Steps `connection` as the transport's loop does (submit and write, then poll and read) until `done`
    /// holds; false when 10 seconds pass first.
    private func step(_ connection: HTTP2ClientConnection, until done: () -> Bool) -> Bool {
        let deadline = HTTP2ClientStream.monotonicNanoseconds() + 10_000_000_000
        while HTTP2ClientStream.monotonicNanoseconds() < deadline {
            let now = HTTP2ClientStream.monotonicNanoseconds()
            connection.service(now: now)
            _ = connection.expire(now: now)
            if done() { return true }
            if let (fd, events) = connection.pollEvents {
                var descriptor = pollfd(fd: fd, events: events, revents: 0)
                if poll(&descriptor, 1, 100) > 0 { connection.handle(revents: descriptor.revents) }
            } else {  // resolving happens in `resolved`, so there is always a socket or the end
                return done()
            }
        }
        return false
    }

    /// `POLLRDHUP` (Linux; Glibc shows it only to `_GNU_SOURCE` builds): the peer closed its side.
    private static let peerClosed = Int16(0x2000)

    /// Waits up to 10 seconds for `events` (or an error or hang-up) on `fd`, without reading it.
    private func wait(_ fd: Int32, for events: Int16) -> Bool {
        var descriptor = pollfd(fd: fd, events: events, revents: 0)
        return poll(&descriptor, 1, 10_000) > 0
    }
}
