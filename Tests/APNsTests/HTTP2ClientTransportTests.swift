import APNsSimulator
import Foundation
import Runtime
import Synchronization
import TestSupportCore
import Testing

@testable import APNs

#if canImport(Glibc)
    import Glibc
#endif

/// The transport's own behaviour (`HTTP2ClientTransport`): URLs, host names, deadlines and idle
/// connections, against the project's simulator over real sockets.
@Suite(.timeLimit(.minutes(5))) struct HTTP2ClientTransportTests {
    @Test func urlsAreParsedIntoAuthorityHostPortAndPath() throws {
        let plain = try #require(HTTP2Target(url: "https://api.push.apple.com/3/device/ab"))
        #expect(plain.authority == "api.push.apple.com" && plain.host == "api.push.apple.com" && plain.port == 443)
        #expect(plain.path == "/3/device/ab" && !plain.hostIsAddress)
        let withPort = try #require(HTTP2Target(url: "https://127.0.0.1:2197"))
        #expect(withPort.authority == "127.0.0.1:2197" && withPort.port == 2197 && withPort.path == "/")
        #expect(withPort.hostIsAddress)
        let v6 = try #require(HTTP2Target(url: "https://[::1]:8443/1/apps/x/channels?x=1"))
        #expect(v6.host == "::1" && v6.port == 8443 && v6.authority == "[::1]:8443" && v6.path == "/1/apps/x/channels?x=1")
        #expect(v6.hostIsAddress)
        for bad in ["http://example.com/", "https://", "https://host:notaport/", "https://host:0/", "ftp://x", "https://[::1/"] {
            #expect(HTTP2Target(url: bad) == nil, "\(bad)")
        }
    }

    /// A URL naming a host (`localhost`), not an address, is resolved and its certificate checked by that
    /// name (SNI and the certificate's DNS name). (Trying each resolved address in turn is not exercised here:
    /// on these machines `localhost` resolves to 127.0.0.1 alone.)
    @Test func aHostNameIsResolvedAndVerifiedByName() async throws {
        try await withSimulatedAPNs { apns in
            let byName = apns.endpoint.url.replacingOccurrences(of: "127.0.0.1", with: "localhost")
            try await withClient(
                APNsClient(
                    configuration: try apns.configuration(baseURLs: [.sandbox: byName, .production: byName]), metrics: Metrics())
            ) { client in
                let result = await client.send(SimulatedAPNs.request())
                await client.shutdown()
                let delivered = apns.simulator.deliveries().count
                await apns.stop()
                #expect(result.classification == nil, "\(result)")
                #expect(delivered == 1)
            }
        }
    }

    /// A request past its deadline fails as retryable `timedOut` and its stream is reset; the
    /// connection stays and carries the next push.
    @Test func aTimedOutStreamIsResetAndTheConnectionCarriesOn() async throws {
        try await withSimulatedAPNs { apns in
            try await withClient(APNsClient(configuration: try apns.configuration(), metrics: Metrics())) { client in
                #expect(await client.send(SimulatedAPNs.request()).classification == nil)
                apns.simulator.addLatency(seconds: 5, count: 1)
                let late = await client.send(SimulatedAPNs.request(timeout: 0.3))
                let next = await client.send(SimulatedAPNs.request())
                await client.shutdown()
                let statistics = apns.simulator.statistics()
                await apns.stop()
                guard case .failure(let failure) = late else {
                    Issue.record("expected a timeout, got \(late)")
                    return
                }
                #expect(failure.cause == .timedOut && failure.classification == .retryable, "\(failure)")
                #expect(failure.latency < 3)
                #expect(next.classification == nil, "\(next)")
                #expect(statistics.connectionsAccepted == 1)
            }
        }
    }

    /// A push still waiting for a free stream at its deadline was never sent: a retryable connection failure
    /// (the outbox then knows it did not arrive), not a timeout with an unknown outcome.
    @Test func aPushThatNeverGotAStreamFailsAsNotSent() async throws {
        try await withSimulatedAPNs(configure: { $0.maximumConcurrentStreams = 1 }) { apns in
            try await withClient(APNsClient(configuration: try apns.configuration(), metrics: Metrics())) { client in
                #expect(await client.send(SimulatedAPNs.request()).classification == nil)  // SETTINGS known
                apns.simulator.addLatency(seconds: 2, count: 1)
                let holding = Task { await client.send(SimulatedAPNs.request(token: SimulatedAPNs.token(2))) }
                try await eventually("the first push at the simulator") { apns.simulator.statistics().requestsTotal >= 2 }
                let waiting = await client.send(SimulatedAPNs.request(token: SimulatedAPNs.token(3), timeout: 0.3))
                let held = await holding.value
                await client.shutdown()
                await apns.stop()
                #expect(held.classification == nil, "\(held)")
                guard case .failure(let failure) = waiting, case .connectionFailed(let detail) = failure.cause else {
                    Issue.record("expected a connection failure, got \(waiting)")
                    return
                }
                #expect(failure.classification == .retryable)
                #expect(detail.contains("no free stream"), "\(detail)")
            }
        }
    }

    /// A connection idle longer than `maximumIdleTime` is closed; the next push opens a new one.
    @Test func anIdleConnectionIsClosedAndTheNextPushOpensAnother() async throws {
        try await withSimulatedAPNs { apns in
            var configuration = try apns.configuration()
            configuration.maximumIdleTime = 1
            try await withClient(APNsClient(configuration: configuration, metrics: Metrics())) { client in
                #expect(await client.send(SimulatedAPNs.request()).classification == nil)
                try await eventually("the idle connection closed", within: 10) {
                    apns.simulator.statistics().connectionsOpen == 0
                }
                #expect(await client.send(SimulatedAPNs.request()).classification == nil)
                await client.shutdown()
                let statistics = apns.simulator.statistics()
                await apns.stop()
                #expect(statistics.connectionsAccepted == 2)
            }
        }
    }

    /// `send(all:)`: one hand-over for many pushes; each result comes back in its request's place with its
    /// own class (accepted, refused by APNs, refused before sending), and the metrics count each one.
    @Test func aBatchIsAnsweredInOrderEachWithItsOwnClass() async throws {
        try await withSimulatedAPNs { apns in
            let metrics = Metrics()
            try await withClient(APNsClient(configuration: try apns.configuration(), metrics: metrics)) { client in
                let gone = SimulatedAPNs.token(7)
                apns.simulator.markUnregistered(token: gone)
                var invalid = SimulatedAPNs.request(token: SimulatedAPNs.token(8))
                invalid.deviceToken = "not-hex"
                let requests =
                    (0..<40).map { SimulatedAPNs.request(token: SimulatedAPNs.token($0 == 7 ? 100 : $0)) }
                    + [SimulatedAPNs.request(token: gone), invalid, SimulatedAPNs.request(token: SimulatedAPNs.token(9))]
                let results = await client.send(all: requests)
                await client.shutdown()
                let delivered = apns.simulator.deliveries()
                await apns.stop()

                #expect(results.count == requests.count)
                for (request, result) in zip(requests.prefix(40), results.prefix(40)) {
                    #expect(result == .success(apnsId: request.apnsId, latency: result.latency), "\(result)")
                }
                guard case .failure(let unregistered) = results[40], case .failure(let refused) = results[41] else {
                    Issue.record("expected two failures, got \(results[40]) and \(results[41])")
                    return
                }
                #expect(unregistered.classification == .tokenDead && unregistered.status == 410, "\(unregistered)")
                #expect(refused.classification == .permanent && refused.status == nil, "\(refused)")
                #expect(results[42].classification == nil, "\(results[42])")
                #expect(delivered.count == 42, "every valid request reached APNs once, the invalid one never")
                #expect(metrics.value("livevisits_apns_responses_total", labels: ["status": "200", "reason": ""]) == 41)
            }
        }
    }

    /// A host whose name takes long to resolve (a slow DNS server) holds back its own connection only: another
    /// host's exchanges are answered meanwhile, and the slow one ends as the resolver answers. (The resolver ran on
    /// the transport's loop thread before: every connection waited for it, their deadlines unenforced.)
    @Test func aHostStillResolvingDoesNotHoldBackAnotherHostsExchanges() async throws {
        try await withSimulatedAPNs { apns in
            final class Resolution: Sendable {
                let entered = Mutex(false)
                let left = Mutex(false)
            }
            let resolution = Resolution()
            let gate = DispatchSemaphore(value: 0)
            let resolver = HTTP2Resolver { host, port in
                guard host == "slow.invalid" else { return HTTP2Resolver.system.resolve(host, port) }
                resolution.entered.withLock { $0 = true }
                _ = gate.wait(timeout: .now() + 15)
                resolution.left.withLock { $0 = true }
                return .failure(.init(kind: .connectFailed, message: "cannot resolve slow.invalid (the test's resolver)"))
            }
            let transport = HTTP2ClientTransport(
                settings: .init(
                    connectTimeoutMilliseconds: 20_000, keepAliveSeconds: 60, maximumIdleSeconds: 60,
                    maximumConcurrentStreams: 10,
                    trustedCertificates: try apns.configuration().trustedCertificates, resolver: resolver))
            func exchange(_ base: String) -> HTTP2Exchange {
                HTTP2Exchange(
                    url: base + "/3/device/" + SimulatedAPNs.token(1), headers: ["apns-push-type: liveactivity"],
                    body: SimulatedAPNs.updateBody(), timeoutMilliseconds: 10_000)
            }
            let port = apns.endpoint.url.split(separator: ":").last.map(String.init) ?? ""
            let slow = Task { await transport.perform(exchange("https://slow.invalid:" + port)) }
            try await eventually("the slow host's resolution started", within: 10) { resolution.entered.withLock { $0 } }
            let fast = await transport.perform(exchange(apns.endpoint.url))
            let slowWasStillResolving = !resolution.left.withLock { $0 }
            gate.signal()
            let slowOutcome = await slow.value
            await transport.shutdown()
            await apns.stop()
            guard case .response(let status, _, _) = fast else {
                Issue.record("the other host's exchange got no answer while a resolution was pending: \(fast)")
                return
            }
            #expect(status == 403, "the simulator's answer to a push without a provider token, got \(status)")
            #expect(slowWasStillResolving)
            guard case .failed(let failure) = slowOutcome else {
                Issue.record("slow.invalid cannot have been answered: \(slowOutcome)")
                return
            }
            #expect(failure.kind == .connectFailed && failure.message.contains("slow.invalid"), "\(failure)")
        }
    }

    private func configuration(url: String, caFile: String, key: TestKey, connectTimeout: Double = 5) throws
        -> APNsConfiguration
    {
        APNsConfiguration(
            baseURLs: [.sandbox: url, .production: url], trustedCertificates: try APNsTrustedCertificates(contentsOfFile: caFile),
            signingKey: try APNsSigningKey(pem: key.pem), keyId: "KEY1234567", teamId: "TEAM123456",
            bundleId: SimulatedAPNs.bundleId, requestTimeout: 20, connectTimeout: connectTimeout)
    }

    /// A TLS server that does not offer HTTP/2 (`openssl s_server`: no ALPN) is a retryable connection
    /// failure that says so, not a hang and not an HTTP/1.1 exchange.
    @Test func aServerWithoutHTTP2IsAConnectionFailureNamingALPN() async throws {
        let directory = try OpenSSLTool.scratchDirectory()
        let key = try TestKey.make()
        defer {
            try? FileManager.default.removeItem(atPath: directory)
            key.remove()
        }
        try OpenSSLTool.run([
            "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
            "-keyout", directory + "/key.pem", "-out", directory + "/cert.pem", "-days", "1",
            "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
        ])
        let port = try NGHTTPDPeer.freePort()
        let server = try ChildProcess(
            "/usr/bin/openssl",
            [
                "s_server", "-quiet", "-accept", "127.0.0.1:\(port)", "-cert", directory + "/cert.pem", "-key",
                directory + "/key.pem",
            ]
        ).start(stderr: .file(directory + "/server.err"))
        defer {
            server.signal(SIGKILL)
            _ = server.waitBlocking()
        }
        try NGHTTPDPeer.waitUntilListening(port)
        try await withClient(
            APNsClient(
                configuration: try configuration(url: "https://127.0.0.1:\(port)", caFile: directory + "/cert.pem", key: key),
                metrics: Metrics())
        ) { client in
            let result = await client.send(SimulatedAPNs.request())
            await client.shutdown()
            guard case .failure(let failure) = result, case .connectionFailed(let detail) = failure.cause else {
                Issue.record("expected a connection failure, got \(result)")
                return
            }
            #expect(failure.classification == .retryable)
            #expect(detail.contains("ALPN h2"), "\(detail)")
        }
    }

    /// A server that accepts the TCP connection and then says nothing (a listening socket nobody accepts
    /// from) fails the push at `connectTimeout`, long before the request's own deadline.
    @Test func aHandshakeThatNeverEndsFailsAtTheConnectTimeout() async throws {
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(listener) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        #expect(bound == 0 && listen(listener, 8) == 0)
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(listener, $0, &length) }
        }
        let port = UInt16(bigEndian: address.sin_port)
        try await withSimulatedAPNs { apns in  // for its CA file and key only
            try await withClient(
                APNsClient(
                    configuration: try configuration(
                        url: "https://127.0.0.1:\(port)", caFile: apns.endpoint.caFile, key: apns.key, connectTimeout: 0.5),
                    metrics: Metrics())
            ) { client in
                let result = await client.send(SimulatedAPNs.request())
                await client.shutdown()
                await apns.stop()
                guard case .failure(let failure) = result, case .connectionFailed(let detail) = failure.cause else {
                    Issue.record("expected a connection failure, got \(result)")
                    return
                }
                #expect(failure.classification == .retryable)
                #expect(detail.contains("longer than 500 ms"), "\(detail)")
                #expect(failure.latency < 10, "failed at the connect timeout, not the request's 20 s deadline")
            }
        }
    }
}
