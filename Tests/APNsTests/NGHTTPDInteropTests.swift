import Foundation
import Runtime
import TestSupportCore
import Testing

@testable import APNs

/// The client against an independent HTTP/2 implementation (nghttpd, installed by scripts/deps; a test
/// fails when it is missing): ALPN h2, one connection, many streams, exactly the contract's headers, the
/// extra CA trusted. (The client's throughput is `livevisits-bench apns`, not a test.)
@Suite(.timeLimit(.minutes(3))) struct NGHTTPDInteropTests {
    private func client(for peer: NGHTTPDPeer, key: TestKey, trust: Bool = true) throws -> APNsClient {
        let configuration = APNsConfiguration(
            baseURLs: [.sandbox: peer.url, .production: peer.url],
            trustedCertificates: trust ? try APNsTrustedCertificates(contentsOfFile: peer.caFile) : nil,
            signingKey: try APNsSigningKey(pem: key.pem), keyId: "KEY1234567", teamId: "TEAM123456",
            bundleId: "com.example.visits", requestTimeout: 30)
        return APNsClient(configuration: configuration, metrics: Metrics())
    }

    private func request(_ index: Int) -> APNsRequest {
        APNsRequest(
            deviceToken: String(repeating: "0a", count: 32), environment: .sandbox, priority: .low,
            expiration: 1_790_000_000, apnsId: UUID().uuidString.lowercased(),
            body: Array(#"{"aps":{"timestamp":\#(index),"event":"update"}}"#.utf8))
    }

    @Test func manyConcurrentStreamsShareOneConnectionWithTheContractHeaders() async throws {
        let peer = try NGHTTPDPeer()
        let key = try TestKey.make()
        defer {
            peer.stop()
            key.remove()
        }
        let client = try client(for: peer, key: key)
        let results = await withTaskGroup(of: APNsResult.self) { group in
            for index in 0..<300 { group.addTask { await client.send(request(index)) } }
            return await group.reduce(into: [APNsResult]()) { $0.append($1) }
        }
        await client.shutdown()
        #expect(results.count == 300)
        #expect(results.allSatisfy { if case .success = $0 { true } else { false } })

        let frames = peer.frames
        let connections = frames.components(separatedBy: "The negotiated protocol: h2").count - 1
        #expect(connections == 1, "\(connections) connections")
        for header in [
            "apns-push-type: liveactivity", "apns-topic: com.example.visits.push-type.liveactivity",
            "apns-priority: 5", "apns-expiration: 1790000000", "authorization: bearer ey",
        ] {
            #expect(frames.contains(header), "missing \(header)")
        }
        #expect(!frames.contains("content-type"))
        #expect(!frames.contains("accept:"))
    }

    @Test func untrustedServerIsAConfigurationFailure() async throws {
        let peer = try NGHTTPDPeer()
        let key = try TestKey.make()
        defer {
            peer.stop()
            key.remove()
        }
        let client = try client(for: peer, key: key, trust: false)
        let result = await client.send(request(1))
        await client.shutdown()
        guard case .failure(let failure) = result else {
            Issue.record("expected a failure, got \(result)")
            return
        }
        #expect(failure.classification == .configuration)
        if case .untrustedServer = failure.cause {} else { Issue.record("cause \(failure.cause)") }
    }

    @Test func nothingListeningIsARetryableConnectionFailure() async throws {
        let key = try TestKey.make()
        defer { key.remove() }
        let port = try NGHTTPDPeer.freePort()
        let configuration = APNsConfiguration(
            baseURLs: [.sandbox: "https://127.0.0.1:\(port)"], signingKey: try APNsSigningKey(pem: key.pem),
            keyId: "K", teamId: "T", bundleId: "b")
        let client = APNsClient(configuration: configuration, metrics: Metrics())
        let result = await client.send(request(1))
        await client.shutdown()
        #expect(result.classification == .retryable)
        if case .failure(let failure) = result, case .connectionFailed = failure.cause {
        } else {
            Issue.record("expected connectionFailed, got \(result)")
        }
    }

    /// Whether nghttpd reported the HTTP/2 session that carried the first request closed: its `[id=N]` is the
    /// first one logged after h2 was first negotiated (an earlier one is the probe that saw nghttpd listen),
    /// and the session's close is `[id=N] [time] closed` (a stream's close names its stream).
    func firstSessionClosed(_ frames: String) -> Bool {
        let lines = frames.split(separator: "\n")
        guard let negotiated = lines.firstIndex(where: { $0.contains("The negotiated protocol: h2") }),
            let first = lines[negotiated...].first(where: { $0.hasPrefix("[id=") }),
            let session = first.split(separator: " ").first
        else { return false }
        return lines.contains { $0.hasPrefix(session + " ") && $0.hasSuffix("] closed") }
    }

    /// An idle connection older than `maximumIdleTime` is replaced rather than reused.
    @Test func idleConnectionIsReusedThenReplacedAfterMaximumIdleTime() async throws {
        let peer = try NGHTTPDPeer()
        let key = try TestKey.make()
        defer {
            peer.stop()
            key.remove()
        }
        var configuration = try client(for: peer, key: key).configuration
        configuration.maximumIdleTime = 1
        let client = APNsClient(configuration: configuration, metrics: Metrics())
        #expect(await client.send(request(1)).classification == nil)
        // The client's event loop retires the connection once it has been idle `maximumIdleTime` (on the
        // transport's monotonic clock): the peer logs the session's close.
        try await eventually("the idle connection closed", within: 30) { firstSessionClosed(peer.frames) }
        #expect(await client.send(request(2)).classification == nil)
        await client.shutdown()
        #expect(peer.frames.components(separatedBy: "The negotiated protocol: h2").count - 1 == 2)
    }
}
