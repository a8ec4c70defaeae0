import Foundation
import Runtime

#if canImport(Glibc)
    import Glibc
#endif

/// A local APNs: HTTP/2 over TLS (ALPN `h2`, nghttp2 + OpenSSL) on loopback, validating pushes as
/// Apple does, recording every request, and injecting faults on demand.
///
/// ```swift
/// var config = SimulatorConfiguration()
/// config.providerKeys = [try ProviderKey.load(file: "AuthKey.pub", teamID: "TEAM", keyID: "KEY")]
/// config.bundleID = "com.example.fieldservice"
/// let simulator = try APNsSimulator(configuration: config)
/// let endpoint = try await simulator.start()      // endpoint.url, endpoint.caFile
/// simulator.failNext(2, status: 503, reason: "ServiceUnavailable")
/// … send pushes …
/// let received = simulator.deliveries()
/// await simulator.stop()
/// ```
///
/// All networking runs on the simulator's own threads (an accept thread and one per connection);
/// no method blocks Swift's cooperative pool.
public final class APNsSimulator: Service {
    /// Every Live Activity topic ends with this.
    public static let topicSuffix = ".push-type.liveactivity"

    public let name = "apns-simulator"
    private let core: SimulatorCore
    private let lifecycle = Lock<Lifecycle>(.idle)

    private enum Lifecycle {
        case idle
        case running([SimulatorServer], SimulatorEndpoint)
        case stopped
    }

    /// Checks the configuration (the provider keys are loaded here; a bad key throws `.publicKey`).
    public init(configuration: SimulatorConfiguration = SimulatorConfiguration()) throws(SimulatorError) {
        core = try SimulatorCore(configuration: configuration)
    }

    /// The configuration in force.
    public var configuration: SimulatorConfiguration { core.configuration }

    /// Loads or generates the TLS identity, binds and starts serving.
    /// - Returns: the URL and the CA file to trust.
    public func start() async throws(SimulatorError) -> SimulatorEndpoint {
        let config = core.configuration
        let alreadyRunning = lifecycle.withLock { state -> Bool in
            if case .idle = state { return false }
            return true
        }
        if alreadyRunning { throw SimulatorError(.alreadyRunning, "the simulator was already started") }
        // A peer that closes mid-write must not kill the process.
        signal(SIGPIPE, SIG_IGN)
        let files: TLSFiles
        switch config.tls {
        case .generate(let directory): files = try CertificateAuthority.identity(directory: directory, host: config.host)
        case .files(let chain, let key, let ca): files = TLSFiles(certificateChain: chain, privateKey: key, caFile: ca)
        }
        let tls = try TLSContext(files: files)
        let server = try SimulatorServer(host: config.host, port: config.port, core: core, tls: tls)
        let sandbox: SimulatorServer
        let management: SimulatorServer
        do {
            sandbox = try SimulatorServer(
                host: config.host, port: config.sandboxPort, core: core, tls: tls, listener: .sandboxPushes)
        } catch {
            await server.stop()
            throw error
        }
        do {
            management = try SimulatorServer(
                host: config.host, port: config.channelsPort, core: core, tls: tls, listener: .channels)
        } catch {
            await server.stop()
            await sandbox.stop()
            throw error
        }
        let host = config.host == "localhost" ? "127.0.0.1" : config.host
        let endpoint = SimulatorEndpoint(
            url: "https://\(host):\(server.port)", port: server.port, caFile: files.caFile,
            sandboxURL: "https://\(host):\(sandbox.port)", sandboxPort: sandbox.port,
            channelsURL: "https://\(host):\(management.port)", channelsPort: management.port)
        let won = lifecycle.withLock { state -> Bool in
            guard case .idle = state else { return false }
            state = .running([server, sandbox, management], endpoint)
            return true
        }
        guard won else {
            await server.stop()
            await sandbox.stop()
            await management.stop()
            throw SimulatorError(.alreadyRunning, "the simulator was already started")
        }
        server.start()
        sandbox.start()
        management.start()
        config.logger.info(
            "apns simulator listening",
            [
                "apns_sim.url": endpoint.url, "apns_sim.sandbox_url": endpoint.sandboxURL,
                "apns_sim.channels_url": endpoint.channelsURL, "apns_sim.ca_file": endpoint.caFile,
                "apns_sim.verifies_jwt": String(core.verifiesSignatures),
            ])
        return endpoint
    }

    /// The endpoint while running.
    public var endpoint: SimulatorEndpoint? {
        lifecycle.withLock { state in
            if case .running(_, let endpoint) = state { return endpoint }
            return nil
        }
    }

    /// Closes the listener and every connection; returns when the simulator's threads have ended.
    public func stop() async {
        let servers = lifecycle.withLock { state -> [SimulatorServer] in
            defer { state = .stopped }
            if case .running(let servers, _) = state { return servers }
            return []
        }
        for server in servers { await server.stop() }
    }

    /// `Service`: starts (unless already running), serves until the task is cancelled, then stops.
    public func run() async throws {
        if endpoint == nil { _ = try await start() }
        await SimulatorCancellation.wait()
        await stop()
    }

    // MARK: Records

    /// Every request recorded so far (pushes, accepted or not), oldest first.
    public func deliveries() -> [SimulatedDelivery] { core.deliveries() }

    /// Forgets the recorded deliveries and removes every fault.
    public func reset() { core.reset() }

    /// Connection and stream counters.
    public func statistics() -> SimulatorStatistics { core.statistics() }

    // MARK: Faults

    /// Applies a fault description (the same one `POST /_sim/faults` takes).
    public func inject(_ faults: FaultSettings) { core.apply(faults) }

    /// Answers the next `count` pushes with `status` and `{"reason": reason}`.
    public func failNext(_ count: Int, status: Int, reason: String) {
        inject(FaultSettings(failNext: .init(count: count, status: status, reason: reason)))
    }

    /// Answers a random `fraction` (0…1) of pushes with `status`/`reason`; a seed makes it reproducible.
    public func failRandomly(fraction: Double, status: Int, reason: String, seed: UInt64? = nil) {
        inject(FaultSettings(failFraction: .init(fraction: fraction, status: status, reason: reason, seed: seed)))
    }

    /// Answers pushes to `token` with 410 `Unregistered` and `timestamp` (ms; default now).
    public func markUnregistered(token: String, timestamp: Int64? = nil) {
        inject(FaultSettings(unregister: [.init(token: token, timestamp: timestamp)]))
    }

    /// Delays each answer by `seconds` (for the next `count` pushes, or until cleared); 0 removes it.
    public func addLatency(seconds: Double, count: Int? = nil) {
        inject(FaultSettings(latency: .init(milliseconds: Int((seconds * 1000).rounded()), count: count)))
    }

    /// Answers the next `requests` pushes, then drops the connection carrying the one after.
    public func dropConnection(afterRequests requests: Int, mode: FaultSettings.DropMode = .close) {
        inject(FaultSettings(dropConnection: .init(afterRequests: requests, mode: mode)))
    }

    /// From now on, answers 403 `ExpiredProviderToken` to every provider token seen so far.
    public func expireProviderTokens() { inject(FaultSettings(expireProviderTokens: true)) }

    // MARK: Channels

    /// The broadcast channels the simulator holds, oldest first.
    public func channels() -> [String] { core.channelIds() }

    /// Creates a channel behind the server's back (an orphan, for reconciliation tests); nil at the limit.
    public func createChannel() -> String? { core.createChannel() }

    /// Forgets channels as if Apple had dropped them: broadcasts to them answer 404 `ChannelNotRegistered`.
    public func forgetChannels(_ ids: [String]) { inject(FaultSettings(forgetChannels: ids)) }

    /// How many channels may exist; a create beyond it answers 400 `CannotCreateChannelConfig`.
    public func setChannelLimit(_ limit: Int) { inject(FaultSettings(channelLimit: limit)) }

    /// Removes every fault (recorded deliveries stay).
    public func clearFaults() { inject(FaultSettings(clear: true)) }
}
