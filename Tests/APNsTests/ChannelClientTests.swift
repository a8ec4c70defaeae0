import APNs
import APNsSimulator
import Foundation
import Runtime
import TestSupportCore
import Testing

/// The channel-management client and broadcasts against the project's simulator: real HTTP/2 over TLS,
/// real JWT checks, the management endpoints on their own listener.
@Suite(.timeLimit(.minutes(5))) struct ChannelClientTests {
    private func value<T>(_ result: Result<T, APNsFailure>, sourceLocation: SourceLocation = #_sourceLocation) -> T? {
        switch result {
        case .success(let value): return value
        case .failure(let failure):
            Issue.record("expected success, got \(failure)", sourceLocation: sourceLocation)
            return nil
        }
    }

    private func failure<T>(_ result: Result<T, APNsFailure>, sourceLocation: SourceLocation = #_sourceLocation)
        -> APNsFailure?
    {
        if case .failure(let failure) = result { return failure }
        Issue.record("expected a failure, got \(result)", sourceLocation: sourceLocation)
        return nil
    }

    @Test func createReadListDeleteOnTheManagementListener() async throws {
        try await withSimulatedAPNs { apns in
            try await withClient(APNsClient(configuration: try apns.configuration(), metrics: Metrics())) { client in
                let id = try #require(value(await client.createChannel(environment: .sandbox)))
                let second = try #require(value(await client.createChannel(environment: .production, messageStoragePolicy: 1)))
                let read = value(await client.readChannel(second, environment: .production))
                let listed = value(await client.listChannels(environment: .sandbox))
                let deleted = await client.deleteChannel(id, environment: .sandbox)
                let again = failure(await client.deleteChannel(id, environment: .sandbox))
                let unknownRead = failure(await client.readChannel(id, environment: .sandbox))
                await client.shutdown()
                let records = apns.simulator.deliveries()
                let remaining = apns.simulator.channels()
                await apns.stop()

                #expect(!id.isEmpty && id != second)
                #expect(Data(base64Encoded: id)?.count == 16)
                #expect(
                    read == APNsClient.ChannelConfiguration(channelId: second, messageStoragePolicy: 1, pushType: "LiveActivity"))
                #expect(listed == [id, second])
                if case .failure(let f) = deleted { Issue.record("delete failed: \(f)") }
                #expect(again?.reason == .channelNotRegistered && again?.status == 404 && again?.classification == .tokenDead)
                #expect(unknownRead?.reason == .channelNotRegistered)
                #expect(remaining == [second])
                // What went over the wire: Apple's paths, the JWT, the body, never on the push listener's port.
                let create = try #require(records.first)
                #expect(create.method == "POST" && create.path == "/1/apps/\(SimulatedAPNs.bundleId)/channels")
                #expect(create.status == 201 && create.providerToken?.issuer == "TEAM123456")
                #expect(create.json?["push-type"]?.stringValue == "LiveActivity")
                #expect(create.json?["message-storage-policy"]?.integerValue == 0)
                #expect(records.map(\.method) == ["POST", "POST", "GET", "GET", "DELETE", "DELETE", "GET"])
                #expect(records[3].path == "/1/apps/\(SimulatedAPNs.bundleId)/all-channels")
                #expect(records[4].header("apns-channel-id") == id && records[4].status == 204)
            }
        }
    }

    @Test func theChannelLimitAnswersCannotCreateChannelConfig() async throws {
        try await withSimulatedAPNs { apns in
            try await withClient(APNsClient(configuration: try apns.configuration(), metrics: Metrics())) { client in
                apns.simulator.setChannelLimit(1)
                let first = await client.createChannel(environment: .sandbox)
                let refused = failure(await client.createChannel(environment: .sandbox))
                await client.shutdown()
                await apns.stop()
                #expect(value(first) != nil)
                #expect(refused?.status == 400 && refused?.reason == .cannotCreateChannelConfig)
                #expect(refused?.classification == .permanent)
            }
        }
    }

    @Test func anAnswerWithoutAChannelIdOrAListIsAMalformedRetryableFailureNeverAnEmptyId() async throws {
        try await withSimulatedAPNs { apns in
            try await withClient(APNsClient(configuration: try apns.configuration(), metrics: Metrics())) { client in
                // A 201 without apns-channel-id, and a 200 list that is not {"channels": [...]}.
                apns.simulator.inject(
                    FaultSettings(failNext: .init(count: 1, status: 201, reason: "Whatever"), listener: .channels))
                let created = failure(await client.createChannel(environment: .sandbox))
                apns.simulator.inject(
                    FaultSettings(failNext: .init(count: 1, status: 200, reason: "NotAList"), listener: .channels))
                let listed = failure(await client.listChannels(environment: .sandbox))
                await client.shutdown()
                let channels = apns.simulator.channels()
                await apns.stop()
                #expect(created?.classification == .retryable && created?.reasonLabel == "malformed_answer")
                if case .malformedAnswer? = created?.cause {
                } else {
                    Issue.record("cause: \(String(describing: created?.cause))")
                }
                #expect(listed?.classification == .retryable && listed?.reasonLabel == "malformed_answer")
                #expect(channels.isEmpty)
            }
        }
    }

    @Test func aDelayedCreateAnswerStillHoldsTheChannelAtTheSimulator() async throws {
        try await withSimulatedAPNs { apns in
            try await withClient(APNsClient(configuration: try apns.configuration(), metrics: Metrics())) { client in
                apns.simulator.inject(FaultSettings(latency: .init(milliseconds: 300, count: 1), listener: .channels))
                async let created = client.createChannel(environment: .sandbox)
                try await eventually("the channel is created", within: 60) { !apns.simulator.channels().isEmpty }
                let id = value(await created)
                await client.shutdown()
                let held = apns.simulator.channels()
                await apns.stop()
                #expect(id.map { [$0] } == held)
            }
        }
    }

    @Test func aBroadcastGoesToThePushHostWithTheChannelHeaderAndNoTopic() async throws {
        try await withSimulatedAPNs { apns in
            try await withClient(APNsClient(configuration: try apns.configuration(), metrics: Metrics())) { client in
                let id = try #require(value(await client.createChannel(environment: .production)))
                let request = APNsRequest.broadcast(
                    channelId: id, environment: .production, priority: .immediate,
                    expiration: Int64(Date().timeIntervalSince1970) + 600, apnsId: UUID().uuidString.lowercased(),
                    body: SimulatedAPNs.updateBody())
                let sent = await client.send(request)
                // A start on a channel is refused; an unknown channel is ChannelNotRegistered.
                let startBody = Array(
                    #"{"aps":{"timestamp":1,"event":"start","content-state":{},"attributes-type":"A","attributes":{},"alert":"x"}}"#
                        .utf8)
                var start = request
                start.body = startBody
                start.apnsId = UUID().uuidString.lowercased()
                let refusedStart = await client.send(start)
                var unknown = request
                unknown.channelId = "AAAAAAAAAAAAAAAAAAAAAA=="
                unknown.apnsId = UUID().uuidString.lowercased()
                let notRegistered = await client.send(unknown)
                await client.shutdown()
                let broadcasts = apns.simulator.deliveries().filter { $0.path.hasPrefix("/4/") }
                await apns.stop()

                #expect(sent == .success(apnsId: request.apnsId, latency: sent.latency))
                let first = try #require(broadcasts.first)
                #expect(first.path == "/4/broadcasts/apps/\(SimulatedAPNs.bundleId)")
                #expect(first.header("apns-channel-id") == id && first.header("apns-topic") == nil)
                #expect(first.header("apns-push-type") == "liveactivity" && first.header("apns-priority") == "10")
                #expect(first.header("apns-id") == request.apnsId && first.providerToken?.keyID == "KEY1234567")
                #expect(first.deviceToken == nil)
                if case .failure(let f) = refusedStart {
                    #expect(f.status == 400 && f.reasonLabel == "BadPayload")
                } else {
                    Issue.record("a start on a channel was accepted")
                }
                if case .failure(let f) = notRegistered {
                    #expect(f.status == 404 && f.reason == .channelNotRegistered && f.classification == .tokenDead)
                } else {
                    Issue.record("a broadcast to an unknown channel was accepted")
                }
            }
        }
    }

    @Test func channelURLsFollowTheirOwnVariablesWithApplesDefaults() throws {
        let key = try TestKey.make()
        defer { key.remove() }
        func configuration(_ extra: [String: String]) throws -> APNsConfiguration {
            var environment = [
                "LIVEVISITS_APNS_KEY_FILE": key.keyFile, "LIVEVISITS_APNS_KEY_ID": "KEY1234567",
                "LIVEVISITS_APNS_TEAM_ID": "TEAM123456", "LIVEVISITS_APNS_BUNDLE_ID": "com.example.visits",
                "LIVEVISITS_APNS_URL": "https://127.0.0.1:9443",
            ]
            environment.merge(extra) { $1 }
            return try APNsConfiguration.fromEnvironment(environment)
        }
        let defaults = try configuration([:])
        #expect(defaults.channelsBaseURL(for: .sandbox) == "https://api-manage-broadcast.sandbox.push.apple.com:2195")
        #expect(defaults.channelsBaseURL(for: .production) == "https://api-manage-broadcast.push.apple.com:2196")
        let both = try configuration(["LIVEVISITS_APNS_CHANNELS_URL": "https://127.0.0.1:9500/"])
        #expect(both.channelsBaseURL(for: .sandbox) == "https://127.0.0.1:9500")
        #expect(both.channelsBaseURL(for: .production) == "https://127.0.0.1:9500")
        let split = try configuration([
            "LIVEVISITS_APNS_CHANNELS_URL": "https://127.0.0.1:9500",
            "LIVEVISITS_APNS_CHANNELS_PRODUCTION_URL": "https://localhost:9501",
        ])
        #expect(split.channelsBaseURL(for: .sandbox) == "https://127.0.0.1:9500")
        #expect(split.channelsBaseURL(for: .production) == "https://localhost:9501")
        #expect(throws: APNsError.self) { try configuration(["LIVEVISITS_APNS_CHANNELS_SANDBOX_URL": "http://x"]) }
        // A broadcast goes to the push host of its environment, not the management host.
        let request = APNsRequest.broadcast(
            channelId: "AAAA", environment: .production, priority: .low, expiration: 0,
            apnsId: "6F1C7A52-7F3B-4C8E-9E43-0A1B2C3D4E5F", body: [])
        #expect(split.url(for: request) == "https://127.0.0.1:9443/4/broadcasts/apps/com.example.visits")
    }
}
