import Foundation
import JSON
import Runtime

/// Sends Live Activity pushes to APNs over HTTP/2 with provider-token authentication.
///
/// `send` never throws and never blocks Swift's cooperative pool: the wire work runs on a thread the
/// client owns (see `HTTP2ClientTransport`). Each environment's host gets one multiplexed connection.
/// As a `Service`, `run()` waits until cancelled and then shuts the connection down, failing whatever is
/// still in flight: in a `ServiceGroup` it goes in a stage before the services that send through it (the
/// outbox worker), so it closes only after they have finished their sends.
public final class APNsClient: Service {
    public let name = "apns-client"
    /// What the client was built with.
    public let configuration: APNsConfiguration
    /// The provider tokens the client presents.
    public let tokens: ProviderTokenSource
    private let transport: HTTP2ClientTransport
    private let logger: Logger
    private let metrics: Metrics
    private let alerts: APNsConfigurationAlerts

    /// - Parameters:
    ///   - tokenStore: where the fleet shares its provider token (a database lease row in production).
    ///   - clock: the wall clock the token policy reads (JWT `iat`, refresh ages).
    public init(
        configuration: APNsConfiguration, tokenStore: any ProviderTokenStore = InMemoryProviderTokenStore(),
        clock: any WallClock = SystemClock(), tokenSettings: ProviderTokenPolicy.Settings = .init(),
        metrics: Metrics = .shared, logger: Logger = Logger(label: "apns")
    ) {
        self.configuration = configuration
        self.tokens = ProviderTokenSource(
            signer: configuration.signer, store: tokenStore, clock: clock, settings: tokenSettings)
        self.transport = HTTP2ClientTransport(
            settings: .init(
                connectTimeoutMilliseconds: Int(configuration.connectTimeout * 1000),
                keepAliveSeconds: max(1, Int(configuration.keepAliveInterval.rounded())),
                maximumIdleSeconds: max(1, Int(configuration.maximumIdleTime.rounded())),
                maximumConcurrentStreams: configuration.maximumConcurrentStreams,
                trustedCertificates: configuration.trustedCertificates))
        self.logger = logger
        self.metrics = metrics
        self.alerts = APNsConfigurationAlerts(metrics: metrics)
    }

    /// Sends one push and classifies the answer. Every request has a deadline: a request that
    /// gets no answer in time is a retryable `timedOut` failure.
    public func send(_ request: APNsRequest) async -> APNsResult {
        await send(all: [request])[0]
    }

    /// Waits until the calling task is cancelled, then shuts down.
    public func run() async throws {
        // Task.sleep returns early (throwing) as soon as the task is cancelled.
        while !Task.isCancelled { try? await Task.sleep(nanoseconds: 3_600_000_000_000) }
        await shutdown()
    }

    /// Closes the connections; requests in flight fail as retryable connection losses, later
    /// ones at once.
    public func shutdown() async { await transport.shutdown() }

    /// Sends several pushes as one hand-over to the HTTP/2 thread (one provider token, one wake-up) and
    /// returns their results in the same order, each classified as `send` classifies it.
    public func send(all requests: [APNsRequest]) async -> [APNsResult] {
        guard !requests.isEmpty else { return [] }
        let started = ContinuousClock.now
        var results = [APNsResult?](repeating: nil, count: requests.count)
        let token: ProviderToken?
        do { token = try await tokens.token() } catch {
            token = nil
            let (cause, classification) = Self.tokenUnavailable(error)
            for (index, request) in requests.enumerated() {
                results[index] = Self.failure(request, cause, classification, started: started)
            }
        }
        if let token {
            var exchanges: [HTTP2Exchange] = []
            var indices: [Int] = []
            exchanges.reserveCapacity(requests.count)
            indices.reserveCapacity(requests.count)
            for (index, request) in requests.enumerated() {
                if let problem = request.invalidity {
                    results[index] = Self.failure(request, .invalidRequest(problem), .permanent, started: started)
                } else {
                    exchanges.append(exchange(for: request, token: token))
                    indices.append(index)
                }
            }
            for (index, (outcome, finished)) in zip(indices, await transport.perform(all: exchanges)) {
                results[index] = interpret(
                    outcome, request: requests[index], token: token, latency: Self.seconds(from: started, to: finished))
            }
        }
        return zip(requests, results).map { request, result in
            let result = result!
            record(result, request: request)
            return result
        }
    }

    // MARK: - One push

    /// Why no provider token could be presented, and its class: a key that cannot sign is a configuration
    /// problem, a store that did not answer is retryable.
    private static func tokenUnavailable(_ error: APNsError) -> (APNsFailure.Cause, APNsFailureClass) {
        (.providerTokenUnavailable(error.message), error.code == .signingFailed ? .configuration : .retryable)
    }

    private static func failure(
        _ request: APNsRequest, _ cause: APNsFailure.Cause, _ classification: APNsFailureClass,
        started: ContinuousClock.Instant
    ) -> APNsResult {
        .failure(
            APNsFailure(
                cause: cause, apnsId: request.apnsId, latency: seconds(since: started), classification: classification))
    }

    /// The HTTP/2 exchange of a push: its URL, the contract's headers and the provider token.
    private func exchange(for request: APNsRequest, token: ProviderToken) -> HTTP2Exchange {
        let timeout = request.timeout ?? configuration.requestTimeout
        // A broadcast names its channel, and its app in the path (no topic); a device push names its topic.
        let destination =
            request.channelId.map { "apns-channel-id: \($0)" } ?? "apns-topic: \(configuration.topic(for: request.pushType))"
        return HTTP2Exchange(
            url: configuration.url(for: request),
            headers: [
                "apns-push-type: \(request.pushType.rawValue)",
                destination,
                "apns-priority: \(request.priority.rawValue)",
                "apns-expiration: \(request.expiration)",
                "apns-id: \(request.apnsId)",
                "authorization: bearer \(token.jwt)",
            ],
            body: request.body, timeoutMilliseconds: Int((timeout * 1000).rounded(.up)))
    }

    /// Classifies what the transport brought back for a push.
    private func interpret(
        _ outcome: HTTP2Exchange.Outcome, request: APNsRequest, token: ProviderToken, latency: Double
    ) -> APNsResult {
        switch outcome {
        case .failed(var transportFailure):
            if !request.deviceToken.isEmpty {
                transportFailure.message = transportFailure.message.replacingOccurrences(
                    of: request.deviceToken, with: Logger.fingerprint(request.deviceToken))
            }
            let (cause, classification) = Self.classifyTransportError(transportFailure)
            return .failure(
                APNsFailure(cause: cause, apnsId: request.apnsId, latency: latency, classification: classification))
        case .response(let status, let headers, let body):
            let apnsId = headers["apns-id"] ?? request.apnsId
            if status == 200 {
                return .success(apnsId: apnsId, uniqueId: headers["apns-unique-id"].flatMap(Self.uuid), latency: latency)
            }
            let (reason, timestamp) = Self.parseErrorBody(body)
            let classification = classifyRefusal(status: status, reason: reason, token: token)
            return .failure(
                APNsFailure(
                    cause: .rejected, status: status, reason: reason, timestamp: timestamp, apnsId: apnsId,
                    latency: latency, classification: classification))
        }
    }

    /// `text` lower-cased when it is a UUID, else nil: a header value goes no further unchecked.
    static func uuid(_ text: String) -> String? {
        UUID(uuidString: text) == nil ? nil : text.lowercased()
    }

    /// Maps a transport failure to a cause: deadlines and broken connections are retryable, an untrusted
    /// server certificate is a configuration problem.
    static func classifyTransportError(_ failure: HTTP2Exchange.Failure) -> (APNsFailure.Cause, APNsFailureClass) {
        switch failure.kind {
        case .timedOut: (.timedOut, .retryable)
        case .untrustedServer: (.untrustedServer(failure.message), .configuration)
        case .connectFailed: (.connectionFailed(failure.message), .retryable)
        case .connectionLost: (.connectionLost(failure.message), .retryable)
        }
    }

    /// Reads `{"reason": "...", "timestamp": 1234}` from an error answer.
    static func parseErrorBody(_ body: [UInt8]) -> (APNsReason?, Int64?) {
        guard let object = try? JSONValue.parse(body), object.isObject else { return (nil, nil) }
        return (object["reason"]?.stringValue.map(APNsReason.init(rawValue:)), object["timestamp"]?.integerValue)
    }

    /// Performs one channel-management exchange with the fleet's provider token (`APNsClient+Channels`).
    func performManagement(
        _ method: HTTP2Exchange.Method, url: String, headers: [String], body: [UInt8], timeout: Double?
    ) async -> Result<(status: Int, headers: [String: String], body: [UInt8], token: ProviderToken), APNsFailure> {
        let started = ContinuousClock.now
        func failure(_ cause: APNsFailure.Cause, _ classification: APNsFailureClass) -> APNsFailure {
            APNsFailure(cause: cause, apnsId: "", latency: Self.seconds(since: started), classification: classification)
        }
        let token: ProviderToken
        do { token = try await tokens.token() } catch {
            let (cause, classification) = Self.tokenUnavailable(error)
            return .failure(failure(cause, classification))
        }
        let exchange = HTTP2Exchange(
            method: method, url: url, headers: headers + ["authorization: bearer \(token.jwt)"], body: body,
            timeoutMilliseconds: Int(((timeout ?? configuration.requestTimeout) * 1000).rounded(.up)))
        switch await transport.perform(exchange) {
        case .failed(let transportFailure):
            let (cause, classification) = Self.classifyTransportError(transportFailure)
            return .failure(failure(cause, classification))
        case .response(let status, let headers, let body):
            return .success((status, headers, body, token))
        }
    }

    /// The class of a refused answer (a push's or a channel request's); `ExpiredProviderToken` makes the
    /// fleet re-sign once, `TooManyProviderTokenUpdates` cools the signing down.
    func classifyRefusal(status: Int, reason: APNsReason?, token: ProviderToken) -> APNsFailureClass {
        var classification = APNsFailureClass.classify(status: status, reason: reason)
        if reason == .expiredProviderToken {
            switch tokens.rejectedAsExpired(token) {
            case .refresh, .alreadyReplaced: classification = .retryable
            case .clockProblem: classification = .configuration
            }
        } else if reason == .tooManyProviderTokenUpdates {
            tokens.rejectedAsTooManyUpdates()
        }
        return classification
    }

    var metricsSink: Metrics { metrics }
    var alertSink: APNsConfigurationAlerts { alerts }
    var logSink: Logger { logger }

    static func elapsed(since start: ContinuousClock.Instant) -> Double { seconds(since: start) }

    private func record(_ result: APNsResult, request: APNsRequest) {
        let help = "APNs answers by HTTP status and reason"
        metrics.observe(
            "livevisits_apns_send_seconds", help: "Seconds from submitting a push to its outcome",
            value: result.latency)
        switch result {
        case .success(let apnsId, let uniqueId, _):
            metrics.increment("livevisits_apns_responses_total", help: help, labels: ["status": "200", "reason": ""])
            alerts.clearAll()
            if Logger.minimumLevel.withLock({ $0 }) <= .debug {
                logger.debug(
                    "push accepted",
                    [
                        "apns.id": apnsId, "apns.unique_id": uniqueId ?? "-",
                        "apns.token": Logger.fingerprint(request.deviceToken),
                    ])
            }
        case .failure(let failure):
            metrics.increment(
                "livevisits_apns_responses_total", help: help,
                labels: ["status": failure.status.map(String.init) ?? "none", "reason": failure.reasonLabel])
            if failure.classification == .configuration { alerts.raise(failure.reasonLabel) }
            logger.log(
                failure.classification == .configuration ? .error : .warning, "push failed",
                [
                    "apns.id": failure.apnsId, "apns.status": failure.status.map(String.init) ?? "none",
                    "apns.reason": failure.reasonLabel, "apns.class": failure.classification.rawValue,
                    "apns.environment": request.environment.rawValue,
                    "apns.token": request.channelId == nil ? Logger.fingerprint(request.deviceToken) : "-",
                    "apns.channel_id": request.channelId ?? "-",
                ])
        }
    }

    private static func seconds(since start: ContinuousClock.Instant) -> Double {
        seconds(from: start, to: .now)
    }

    private static func seconds(from start: ContinuousClock.Instant, to end: ContinuousClock.Instant) -> Double {
        (end - start).inSeconds
    }
}
