import Foundation
import Runtime

/// How an `APNsSimulator` listens and what it accepts.
public struct SimulatorConfiguration: Sendable {
    /// Address to bind (loopback by default).
    public var host: String = "127.0.0.1"
    /// Port to bind; 0 picks a free one (read it from `start()`'s endpoint).
    public var port: UInt16 = 0
    /// Port of the sandbox push listener (`SimulatorListener.sandboxPushes`); 0 picks a free one.
    public var sandboxPort: UInt16 = 0
    /// Port of the channel-management listener (Apple's are 2195 and 2196); 0 picks a free one.
    public var channelsPort: UInt16 = 0
    /// TLS certificate source.
    public var tls: SimulatorTLSIdentity = .generate(directory: nil)
    /// Keys that may sign provider tokens. Empty: any well-formed ES256 JWT is accepted unverified
    /// (its age is still checked).
    public var providerKeys: [ProviderKey] = []
    /// The app's bundle id, or the full topic `<bundle>.push-type.liveactivity`; when set, any
    /// other topic answers 400 `DeviceTokenNotForTopic`.
    public var bundleID: String?
    /// Clock for receive times and provider-token age.
    public var clock: any WallClock = SystemClock()
    /// A provider token older than this (seconds) answers 403 `ExpiredProviderToken`.
    public var providerTokenLifetime: Double = 3600
    /// How far in the future (seconds) an `iat` may be before the token is refused as invalid.
    public var providerTokenFutureTolerance: Double = 2
    /// Largest accepted payload in bytes (APNs: 4096); larger answers 413 `PayloadTooLarge`.
    public var maximumPayloadSize: Int = 4096
    /// HTTP/2 `SETTINGS_MAX_CONCURRENT_STREAMS` announced to clients.
    public var maximumConcurrentStreams: UInt32 = 1000
    /// How many deliveries are kept (oldest dropped first).
    public var maximumRecordedDeliveries: Int = 50_000
    /// Called on a simulator thread for every recorded request (the demo prints `summaryLine`).
    public var onDelivery: (@Sendable (SimulatedDelivery) -> Void)?
    /// Where the simulator logs (never a token or JWT).
    public var logger: Logger = Logger(label: "apns-sim")

    public init() {}

    /// The topic every push must carry, when a bundle id is configured.
    var expectedTopic: String? {
        guard let bundleID, !bundleID.isEmpty else { return nil }
        return bundleID.hasSuffix(APNsSimulator.topicSuffix) ? bundleID : bundleID + APNsSimulator.topicSuffix
    }
}
