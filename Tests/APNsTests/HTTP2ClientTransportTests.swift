import APNsSimulator
import Foundation
import Runtime
import TestSupport
import Testing

@testable import APNs

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

    /// `localhost` is checked by name (SNI and the certificate's DNS name), and when it resolves to
    /// an address nothing listens on (the simulator listens on 127.0.0.1 only), the next one is tried.
    @Test func aHostNameIsVerifiedByNameAndEveryAddressIsTried() async throws {
        let apns = try await SimulatedAPNs.start()
        let byName = apns.endpoint.url.replacingOccurrences(of: "127.0.0.1", with: "localhost")
        let client = APNsClient(
            configuration: try apns.configuration(baseURLs: [.sandbox: byName, .production: byName]), metrics: Metrics())
        let result = await client.send(SimulatedAPNs.request())
        await client.shutdown()
        let delivered = apns.simulator.deliveries().count
        await apns.stop()
        #expect(result.classification == nil, "\(result)")
        #expect(delivered == 1)
    }

    /// A request past its deadline fails as retryable `timedOut` and its stream is reset; the
    /// connection stays and carries the next push.
    @Test func aTimedOutStreamIsResetAndTheConnectionCarriesOn() async throws {
        let apns = try await SimulatedAPNs.start()
        let client = APNsClient(configuration: try apns.configuration(), metrics: Metrics())
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

    /// A connection idle longer than `maximumIdleTime` is closed; the next push opens a new one.
    @Test func anIdleConnectionIsClosedAndTheNextPushOpensAnother() async throws {
        let apns = try await SimulatedAPNs.start()
        var configuration = try apns.configuration()
        configuration.maximumIdleTime = 1
        let client = APNsClient(configuration: configuration, metrics: Metrics())
        #expect(await client.send(SimulatedAPNs.request()).classification == nil)
        try await eventually("the idle connection closed", within: 10) { apns.simulator.statistics().connectionsOpen == 0 }
        #expect(await client.send(SimulatedAPNs.request()).classification == nil)
        await client.shutdown()
        let statistics = apns.simulator.statistics()
        await apns.stop()
        #expect(statistics.connectionsAccepted == 2)
    }

    /// `send(all:)`: one hand-over for many pushes; each result comes back in its request's place with its
    /// own class (accepted, refused by APNs, refused before sending), and the metrics count each one.
    @Test func aBatchIsAnsweredInOrderEachWithItsOwnClass() async throws {
        let apns = try await SimulatedAPNs.start()
        let metrics = Metrics()
        let client = APNsClient(configuration: try apns.configuration(), metrics: metrics)
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
