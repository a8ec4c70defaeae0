import APNs
import APNsSimulator
import Foundation
import Runtime
import TestSupportCore

/// The project's APNs simulator, running in-process, trusting a fresh P-256 key, plus a client
/// configured for it (CA file and URL as `LIVEVISITS_APNS_CA_FILE` / `…_URL` would give them).
struct SimulatedAPNs {
    static let bundleId = "com.example.visits"
    let simulator: APNsSimulator
    let endpoint: SimulatorEndpoint
    let key: TestKey

    static func start(
        key: TestKey? = nil, clock: (any WallClock)? = nil, configure: (inout SimulatorConfiguration) -> Void = { _ in }
    ) async throws -> SimulatedAPNs {
        let key = try key ?? TestKey.make()
        var configuration = SimulatorConfiguration()
        let publicKey = String(decoding: FileManager.default.contents(atPath: key.publicKeyFile) ?? Data(), as: UTF8.self)
        configuration.providerKeys = [ProviderKey(teamID: "TEAM123456", keyID: "KEY1234567", publicKeyPEM: publicKey)]
        configuration.bundleID = bundleId
        configuration.logger = Logger(label: "apns-sim-test")
        if let clock { configuration.clock = clock }
        configure(&configuration)
        let simulator = try APNsSimulator(configuration: configuration)
        let endpoint = try await simulator.start()
        return SimulatedAPNs(simulator: simulator, endpoint: endpoint, key: key)
    }

    /// A configuration pointing both environments at this simulator (override with `baseURLs`).
    func configuration(
        bundleId: String = SimulatedAPNs.bundleId, keyId: String = "KEY1234567", signingKey: TestKey? = nil,
        baseURLs: [APNsEnvironment: String]? = nil, requestTimeout: Double = 30
    ) throws -> APNsConfiguration {
        try APNsConfiguration.fromEnvironment([
            "LIVEVISITS_APNS_URL": endpoint.url,
            "LIVEVISITS_APNS_CHANNELS_URL": endpoint.channelsURL,
            "LIVEVISITS_APNS_CA_FILE": endpoint.caFile,
            "LIVEVISITS_APNS_KEY_FILE": (signingKey ?? key).keyFile,
            "LIVEVISITS_APNS_KEY_ID": keyId,
            "LIVEVISITS_APNS_TEAM_ID": "TEAM123456",
            "LIVEVISITS_APNS_BUNDLE_ID": bundleId,
        ]).with { configuration in
            if let baseURLs { configuration.baseURLs = baseURLs }
            configuration.requestTimeout = requestTimeout
        }
    }

    func stop() async {
        await simulator.stop()
        key.remove()
    }

    static func token(_ n: Int) -> String { String(repeating: String(format: "%02x", n % 256), count: 32) }

    /// A valid Live Activity update body (the seed's shape).
    static func updateBody(timestamp: Int64 = Int64(Date().timeIntervalSince1970), padding: Int = 0) -> [UInt8] {
        let van = "White van" + String(repeating: " ", count: padding)
        return Array(
            """
            {"aps":{"timestamp":\(timestamp),"event":"update","content-state":{"technicianName":"Sam",\
            "avatarSymbol":"person.crop.circle","vanDescription":"\(van)","arrivalStartEpoch":1790000300,\
            "arrivalEndEpoch":1790000900,"status":"nearby","kilometresAway":1.2},"stale-date":\(timestamp + 120),\
            "relevance-score":100}}
            """.utf8)
    }

    static func request(
        token: String = SimulatedAPNs.token(1), environment: APNsEnvironment = .sandbox, priority: APNsPriority = .low,
        body: [UInt8] = SimulatedAPNs.updateBody(), timeout: Double? = nil
    ) -> APNsRequest {
        APNsRequest(
            deviceToken: token, environment: environment, priority: priority,
            expiration: Int64(Date().timeIntervalSince1970) + 3600, apnsId: UUID().uuidString.lowercased(), body: body,
            timeout: timeout)
    }
}

extension APNsConfiguration {
    fileprivate func with(_ change: (inout APNsConfiguration) -> Void) -> APNsConfiguration {
        var copy = self
        change(&copy)
        return copy
    }
}

/// Lends a running simulator (see `SimulatedAPNs.start`) to `body` and stops it once `body` has returned or
/// thrown.
func withSimulatedAPNs<Result>(
    key: TestKey? = nil, clock: (any WallClock)? = nil, configure: (inout SimulatorConfiguration) -> Void = { _ in },
    isolation: isolated (any Actor)? = #isolation,
    _ body: (SimulatedAPNs) async throws -> Result
) async throws -> Result {
    try await withResource(
        { try await SimulatedAPNs.start(key: key, clock: clock, configure: configure) }, close: { await $0.stop() }, body)
}

/// Lends the client `make` builds to `body` and shuts it down once `body` has returned or thrown (a shutdown
/// the test does itself, to read what the simulator counted afterwards, is idempotent).
func withClient<Result>(
    _ make: @autoclosure () throws -> APNsClient, isolation: isolated (any Actor)? = #isolation,
    _ body: (APNsClient) async throws -> Result
) async throws -> Result {
    try await withResource({ try make() }, close: { await $0.shutdown() }, body)
}
