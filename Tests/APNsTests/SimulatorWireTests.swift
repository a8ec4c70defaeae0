import APNs
import APNsSimulator
import Foundation
import Runtime
import TestSupportCore
import Testing

/// The client against the project's APNs simulator: real HTTP/2 over TLS, real JWT checks.
@Suite(.timeLimit(.minutes(5))) struct SimulatorWireTests {
    private func failureOf(_ result: APNsResult, sourceLocation: SourceLocation = #_sourceLocation) -> APNsFailure? {
        if case .failure(let failure) = result { return failure }
        Issue.record("expected a failure, got \(result)", sourceLocation: sourceLocation)
        return nil
    }

    @Test func successCarriesTheContractHeadersAndAVerifiedJWT() async throws {
        try await withSimulatedAPNs { apns in
            try await withClient(APNsClient(configuration: try apns.configuration(), metrics: Metrics())) { client in
                let request = SimulatedAPNs.request(priority: .immediate)
                let result = await client.send(request)
                await client.shutdown()
                let deliveries = apns.simulator.deliveries()
                await apns.stop()

                #expect(result == .success(apnsId: request.apnsId, latency: result.latency))
                let delivery = try #require(deliveries.first)
                #expect(deliveries.count == 1)
                #expect(delivery.accepted)
                #expect(delivery.method == "POST")
                #expect(delivery.path == "/3/device/\(request.deviceToken)")
                #expect(delivery.header("apns-push-type") == "liveactivity")
                #expect(delivery.header("apns-topic") == "com.example.visits.push-type.liveactivity")
                #expect(delivery.header("apns-priority") == "10")
                #expect(delivery.header("apns-expiration") == String(request.expiration))
                #expect(delivery.header("apns-id")?.lowercased() == request.apnsId)
                #expect(delivery.header("content-type") == nil)
                #expect(delivery.providerToken?.algorithm == "ES256")
                #expect(delivery.providerToken?.keyID == "KEY1234567")
                #expect(delivery.providerToken?.issuer == "TEAM123456")
                #expect(delivery.payload == String(decoding: request.body, as: UTF8.self))
            }
        }
    }

    /// Apple's development environment answers an accepted push with an `apns-unique-id` (for its Push
    /// Notifications Console), production never: the simulator's sandbox host does the same, and the client
    /// hands the id on with the success. A refused push has none.
    @Test func onlyTheSandboxHostAnswersAUniqueId() async throws {
        try await withSimulatedAPNs { apns in
            let configuration = try apns.configuration(
                baseURLs: [.sandbox: apns.endpoint.sandboxURL, .production: apns.endpoint.url])
            try await withClient(APNsClient(configuration: configuration, metrics: Metrics())) { client in
                let sandbox = SimulatedAPNs.request(token: SimulatedAPNs.token(1), environment: .sandbox)
                let production = SimulatedAPNs.request(token: SimulatedAPNs.token(2), environment: .production)
                let sandboxResult = await client.send(sandbox)
                let productionResult = await client.send(production)
                apns.simulator.failNext(1, status: 503, reason: "ServiceUnavailable")
                let refused = await client.send(SimulatedAPNs.request(token: SimulatedAPNs.token(3), environment: .sandbox))
                await client.shutdown()
                let deliveries = apns.simulator.deliveries()
                await apns.stop()

                let atSandbox = try #require(deliveries.first { $0.deviceToken == sandbox.deviceToken })
                let uniqueId = try #require(atSandbox.uniqueID)
                #expect(UUID(uuidString: uniqueId) != nil && uniqueId == uniqueId.lowercased())
                #expect(sandboxResult == .success(apnsId: sandbox.apnsId, uniqueId: uniqueId, latency: sandboxResult.latency))
                #expect(sandboxResult.uniqueId == uniqueId)
                let atProduction = try #require(deliveries.first { $0.deviceToken == production.deviceToken })
                #expect(atProduction.accepted && atProduction.uniqueID == nil)
                #expect(productionResult == .success(apnsId: production.apnsId, latency: productionResult.latency))
                #expect(productionResult.uniqueId == nil)
                #expect(refused.classification == .retryable && refused.uniqueId == nil)
                #expect(deliveries.first { $0.deviceToken == SimulatedAPNs.token(3) }?.uniqueID == nil)
            }
        }
    }

    @Test(arguments: [
        (429, "TooManyRequests", APNsFailureClass.retryable), (500, "InternalServerError", .retryable),
        (503, "ServiceUnavailable", .retryable), (403, "InvalidProviderToken", .configuration),
        (403, "MissingProviderToken", .configuration), (403, "UnrelatedKeyIdInToken", .configuration),
        (400, "BadTopic", .configuration), (400, "TopicDisallowed", .configuration),
        (400, "BadDeviceToken", .tokenDead), (400, "DeviceTokenNotForTopic", .tokenDead),
        (410, "ExpiredToken", .tokenDead), (400, "BadPriority", .permanent), (400, "BrandNewReason", .permanent),
    ])
    func injectedAnswersAreClassified(status: Int, reason: String, expected: APNsFailureClass) async throws {
        try await withSimulatedAPNs { apns in
            let metrics = Metrics()
            try await withClient(APNsClient(configuration: try apns.configuration(), metrics: metrics)) { client in
                apns.simulator.failNext(1, status: status, reason: reason)
                let result = await client.send(SimulatedAPNs.request())
                let after = await client.send(SimulatedAPNs.request())
                await client.shutdown()
                await apns.stop()

                let failure = try #require(failureOf(result))
                #expect(failure.status == status)
                #expect(failure.reason?.rawValue == reason)
                #expect(failure.classification == expected)
                #expect(after.classification == nil)
                #expect(
                    metrics.value("livevisits_apns_responses_total", labels: ["status": String(status), "reason": reason]) == 1)
                #expect(metrics.value("livevisits_apns_send_seconds") == 2)
                if expected == .configuration {
                    // Raised by the failure, cleared by the next accepted push.
                    #expect(metrics.value("livevisits_apns_config_alert", labels: ["reason": reason]) == 0)
                }
            }
        }
    }

    @Test func configurationFailureRaisesTheAlertMetric() async throws {
        try await withSimulatedAPNs { apns in
            let metrics = Metrics()
            try await withClient(APNsClient(configuration: try apns.configuration(), metrics: metrics)) { client in
                apns.simulator.failNext(1, status: 403, reason: "InvalidProviderToken")
                let result = await client.send(SimulatedAPNs.request())
                #expect(result.classification == .configuration)
                #expect(metrics.value("livevisits_apns_config_alert", labels: ["reason": "InvalidProviderToken"]) == 1)
                #expect(metrics.value("livevisits_apns_config_alert") == 1)
            }
        }
    }

    /// Real validation, not injected: the simulator's own checks produce these answers.
    @Test func realRefusalsAreClassified() async throws {
        try await withSimulatedAPNs { apns in
            let stranger = try TestKey.make()
            defer { stranger.remove() }
            let good = APNsClient(configuration: try apns.configuration(), metrics: Metrics())
            let wrongTopic = APNsClient(configuration: try apns.configuration(bundleId: "com.example.other"), metrics: Metrics())
            let wrongKey = APNsClient(configuration: try apns.configuration(signingKey: stranger), metrics: Metrics())

            let tooLarge = failureOf(await good.send(SimulatedAPNs.request(body: SimulatedAPNs.updateBody(padding: 4200))))
            #expect(tooLarge?.status == 413 && tooLarge?.reason == .payloadTooLarge && tooLarge?.classification == .permanent)

            let shortToken = failureOf(await good.send(SimulatedAPNs.request(token: "abcd")))
            #expect(shortToken?.reason == .badDeviceToken && shortToken?.classification == .tokenDead)

            let notForTopic = failureOf(await wrongTopic.send(SimulatedAPNs.request()))
            #expect(notForTopic?.reason == .deviceTokenNotForTopic && notForTopic?.classification == .tokenDead)

            let badSignature = failureOf(await wrongKey.send(SimulatedAPNs.request()))
            #expect(badSignature?.status == 403 && badSignature?.reason == .invalidProviderToken)
            #expect(badSignature?.classification == .configuration)

            let garbage = failureOf(await good.send(SimulatedAPNs.request(body: Array(#"{"aps":{}}"#.utf8))))
            #expect(garbage?.classification == .permanent)

            for client in [good, wrongTopic, wrongKey] { await client.shutdown() }
        }
    }

    @Test func unregisteredTokenIsDeadWithItsTimestamp() async throws {
        try await withSimulatedAPNs { apns in
            try await withClient(APNsClient(configuration: try apns.configuration(), metrics: Metrics())) { client in
                let token = SimulatedAPNs.token(7)
                apns.simulator.markUnregistered(token: token, timestamp: 1_790_000_000_123)
                let dead = failureOf(await client.send(SimulatedAPNs.request(token: token)))
                let other = await client.send(SimulatedAPNs.request(token: SimulatedAPNs.token(8)))
                await client.shutdown()
                await apns.stop()
                #expect(dead?.status == 410)
                #expect(dead?.reason == .unregistered)
                #expect(dead?.timestamp == 1_790_000_000_123)
                #expect(dead?.classification == .tokenDead)
                #expect(other.classification == nil)
            }
        }
    }

    @Test func slowAnswerPastTheDeadlineIsARetryableTimeout() async throws {
        try await withSimulatedAPNs { apns in
            try await withClient(APNsClient(configuration: try apns.configuration(), metrics: Metrics())) { client in
                #expect(await client.send(SimulatedAPNs.request()).classification == nil)  // connect first
                apns.simulator.addLatency(seconds: 3, count: 1)
                let slow = failureOf(await client.send(SimulatedAPNs.request(timeout: 0.3)))
                #expect(slow?.cause == .timedOut)
                #expect(slow?.classification == .retryable)
                #expect(await client.send(SimulatedAPNs.request()).classification == nil)
            }
        }
    }

    @Test func oneTokenIsReusedAcrossRequests() async throws {
        try await withSimulatedAPNs { apns in
            try await withClient(APNsClient(configuration: try apns.configuration(), metrics: Metrics())) { client in
                for n in 0..<5 {
                    #expect(await client.send(SimulatedAPNs.request(token: SimulatedAPNs.token(n))).classification == nil)
                }
                let first = try await client.tokens.token()
                await client.shutdown()
                let deliveries = apns.simulator.deliveries()
                await apns.stop()
                #expect(deliveries.count == 5)
                #expect(Set(deliveries.compactMap { $0.providerToken?.issuedAt }) == [first.issuedAt])
            }
        }
    }

    /// 403 ExpiredProviderToken on a token at least 20 minutes old: retryable, the next push
    /// carries a new token. The same answer on the fresh token is a clock problem: configuration.
    @Test func expiredProviderTokenRefreshesOnceThenRaisesAClockAlert() async throws {
        let start = Date().timeIntervalSince1970
        let clientClock = ManualClock(now: start)
        try await withSimulatedAPNs(clock: clientClock) { apns in  // one clock: the simulator checks iat against it
            let metrics = Metrics()
            let configuration = try apns.configuration()
            try await withClient(APNsClient(configuration: configuration, clock: clientClock, metrics: metrics)) { client in
                #expect(await client.send(SimulatedAPNs.request()).classification == nil)
                let first = try await client.tokens.token()

                clientClock.advance(by: 25 * 60)
                apns.simulator.expireProviderTokens()
                let expired = failureOf(await client.send(SimulatedAPNs.request()))
                #expect(expired?.reason == .expiredProviderToken)
                #expect(expired?.classification == .retryable)
                #expect(await client.send(SimulatedAPNs.request()).classification == nil)
                let second = try await client.tokens.token()
                #expect(second.issuedAt == first.issuedAt + 25 * 60)

                apns.simulator.expireProviderTokens()
                let clock = failureOf(await client.send(SimulatedAPNs.request()))
                #expect(clock?.reason == .expiredProviderToken)
                #expect(clock?.classification == .configuration)
                #expect(metrics.value("livevisits_apns_config_alert", labels: ["reason": "ExpiredProviderToken"]) == 1)
                #expect(try await client.tokens.token() == second)  // no second refresh within 20 minutes

                await client.shutdown()
                let issued = apns.simulator.deliveries().compactMap { $0.providerToken?.issuedAt }
                await apns.stop()
                #expect(Set(issued) == [first.issuedAt, second.issuedAt])
            }
        }
    }

    @Test(arguments: [FaultSettings.DropMode.close, .goaway])
    func droppedConnectionIsRetryableAndTheNextPushReconnects(mode: FaultSettings.DropMode) async throws {
        try await withSimulatedAPNs { apns in
            try await withClient(APNsClient(configuration: try apns.configuration(), metrics: Metrics())) { client in
                #expect(await client.send(SimulatedAPNs.request()).classification == nil)
                apns.simulator.addLatency(seconds: 0.3)  // keep streams in flight when the connection goes
                apns.simulator.dropConnection(afterRequests: 2, mode: mode)
                let results = await withTaskGroup(of: APNsResult.self) { group in
                    for n in 0..<8 { group.addTask { await client.send(SimulatedAPNs.request(token: SimulatedAPNs.token(n))) } }
                    return await group.reduce(into: [APNsResult]()) { $0.append($1) }
                }
                apns.simulator.clearFaults()
                let lost = results.compactMap { result -> APNsFailure? in
                    if case .failure(let failure) = result { return failure }
                    return nil
                }
                // With GOAWAY, streams above the last one the server names are unprocessed and the transport sends
                // them again on a new connection, so none is lost; with a plain close, the requests in flight are.
                if mode == .close { #expect(!lost.isEmpty) } else { #expect(lost.isEmpty, "\(lost)") }
                for failure in lost {
                    #expect(failure.classification == .retryable, "\(failure)")
                }
                let next = await client.send(SimulatedAPNs.request())
                #expect(next.classification == nil, "\(next)")
                await client.shutdown()
                let statistics = apns.simulator.statistics()
                await apns.stop()
                #expect(statistics.connectionsAccepted >= 2)
            }
        }
    }

    @Test func sandboxAndProductionAreRoutedToTheirOwnHosts() async throws {
        try await withSimulatedAPNs { sandbox in
            // Same CA and server certificate for both (a second generated CA would share the first's name).
            let certificates = (sandbox.endpoint.caFile as NSString).deletingLastPathComponent
            let tls = SimulatorTLSIdentity.generate(directory: certificates)
            try await withSimulatedAPNs(key: sandbox.key, configure: { $0.tls = tls }) { production in
                let configuration = try APNsConfiguration.fromEnvironment([
                    "LIVEVISITS_APNS_SANDBOX_URL": sandbox.endpoint.url,
                    "LIVEVISITS_APNS_PRODUCTION_URL": production.endpoint.url,
                    "LIVEVISITS_APNS_URL": "https://127.0.0.1:1",  // loses to both overrides
                    "LIVEVISITS_APNS_CA_FILE": sandbox.endpoint.caFile,
                    "LIVEVISITS_APNS_KEY_FILE": sandbox.key.keyFile, "LIVEVISITS_APNS_KEY_ID": "KEY1234567",
                    "LIVEVISITS_APNS_TEAM_ID": "TEAM123456", "LIVEVISITS_APNS_BUNDLE_ID": SimulatedAPNs.bundleId,
                ])
                try await withClient(APNsClient(configuration: configuration, metrics: Metrics())) { client in

                    let toSandbox = SimulatedAPNs.request(token: SimulatedAPNs.token(1), environment: .sandbox)
                    let toProduction = SimulatedAPNs.request(token: SimulatedAPNs.token(2), environment: .production)
                    #expect(await client.send(toSandbox).classification == nil)
                    #expect(await client.send(toProduction).classification == nil)
                    await client.shutdown()
                    let sandboxSeen = sandbox.simulator.deliveries().map(\.deviceToken)
                    let productionSeen = production.simulator.deliveries().map(\.deviceToken)
                    await production.simulator.stop()
                    await sandbox.stop()
                    #expect(sandboxSeen == [toSandbox.deviceToken])
                    #expect(productionSeen == [toProduction.deviceToken])
                }
            }
        }
    }

    /// As a Service: cancelling `run()` shuts the client down; a push in flight then fails as
    /// retryable (it may have arrived), and later pushes fail at once instead of hanging.
    @Test func cancellingRunShutsDownAndFailsPushesRetryably() async throws {
        try await withSimulatedAPNs { apns in
            // The held push would be answered (200) well before the client's own timeout if the shutdown did
            // not interrupt it.
            let configuration = try apns.configuration(requestTimeout: 600)
            try await withClient(APNsClient(configuration: configuration, metrics: Metrics())) { client in
                let service = Task { try await client.run() }
                #expect(await client.send(SimulatedAPNs.request()).classification == nil)
                apns.simulator.addLatency(seconds: 60)
                let inFlight = Task { await client.send(SimulatedAPNs.request()) }
                try await eventually("the second push at the simulator") { apns.simulator.statistics().requestsTotal >= 2 }
                service.cancel()
                try await service.value
                let interrupted = await inFlight.value
                let after = await client.send(SimulatedAPNs.request())
                await apns.stop()
                #expect(interrupted.classification == .retryable, "\(interrupted)")
                #expect(after.classification == .retryable, "\(after)")
            }
        }
    }

    @Test func manyStreamsInFlightShareOneConnection() async throws {
        try await withSimulatedAPNs { apns in
            try await withClient(APNsClient(configuration: try apns.configuration(), metrics: Metrics())) { client in
                let statistics = await Self.burst(of: 400, through: client, to: apns)
                #expect(statistics.connectionsAccepted == 1)
                #expect(statistics.maximumConcurrentStreams > 1)
            }
        }
    }

    /// The server's SETTINGS_MAX_CONCURRENT_STREAMS bounds the streams in flight; the rest queue on
    /// the same connection rather than opening more.
    @Test func serverStreamLimitIsRespectedOnOneConnection() async throws {
        try await withSimulatedAPNs(configure: { $0.maximumConcurrentStreams = 8 }) { apns in
            try await withClient(APNsClient(configuration: try apns.configuration(), metrics: Metrics())) { client in
                // One push first, so the connection (and the server's SETTINGS with its stream limit) is up before
                // the burst: a burst into a connection still in its TLS handshake may, under load, make curl open a
                // second one, which is not what this test is about.
                #expect(await client.send(SimulatedAPNs.request(token: SimulatedAPNs.token(99))).classification == nil)
                apns.simulator.addLatency(seconds: 0.05)
                let statistics = await Self.burst(of: 64, through: client, to: apns)
                #expect(statistics.connectionsAccepted == 1)
                #expect(statistics.maximumConcurrentStreams <= 8)
            }
        }
    }

    /// Sends `count` pushes at once through `client`, expects every one accepted, shuts the client down and
    /// returns what the simulator counted.
    static func burst(of count: Int, through client: APNsClient, to apns: SimulatedAPNs) async
        -> SimulatorStatistics
    {
        let results = await withTaskGroup(of: APNsResult.self) { group in
            for n in 0..<count { group.addTask { await client.send(SimulatedAPNs.request(token: SimulatedAPNs.token(n))) } }
            return await group.reduce(into: [APNsResult]()) { $0.append($1) }
        }
        await client.shutdown()
        #expect(results.allSatisfy { $0.classification == nil })
        return apns.simulator.statistics()
    }
}
