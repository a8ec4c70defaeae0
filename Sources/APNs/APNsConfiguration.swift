import Foundation

/// Everything the APNs client needs: where to send, what to trust, how to sign, which topic.
public struct APNsConfiguration: Sendable {
    /// Base URL per environment (`https://host[:port]`, no path).
    public var baseURLs: [APNsEnvironment: String]
    /// Channel-management base URL per environment (broadcast channels; Apple's own hosts, ports 2195/2196).
    public var channelsBaseURLs: [APNsEnvironment: String] = [:]
    /// Extra certificates to trust besides the system store.
    public var trustedCertificates: APNsTrustedCertificates?
    /// The team's P-256 auth key.
    public var signingKey: APNsSigningKey
    /// JWT `kid`.
    public var keyId: String
    /// JWT `iss`.
    public var teamId: String
    /// The app's bundle id.
    public var bundleId: String
    /// Default deadline of one request, in seconds (queueing, connecting and the answer included).
    public var requestTimeout: Double
    /// Seconds to wait for a connection (TCP and TLS).
    public var connectTimeout: Double
    /// An idle connection sends an HTTP/2 PING every this many seconds, and its socket TCP keep-alive
    /// probes after as many idle seconds (then every half of it), which keeps NAT mappings open and
    /// finds dead peers.
    public var keepAliveInterval: Double
    /// A connection idle longer than this is not reused: the next push opens a fresh one.
    public var maximumIdleTime: Double
    /// The most streams in flight per connection; the server's SETTINGS may lower it.
    public var maximumConcurrentStreams: Int

    public init(
        baseURLs: [APNsEnvironment: String] = [:], trustedCertificates: APNsTrustedCertificates? = nil,
        signingKey: APNsSigningKey, keyId: String, teamId: String, bundleId: String,
        requestTimeout: Double = 10, connectTimeout: Double = 5, keepAliveInterval: Double = 30,
        maximumIdleTime: Double = 600, maximumConcurrentStreams: Int = 1000
    ) {
        var urls = baseURLs
        for environment in APNsEnvironment.allCases where urls[environment] == nil {
            urls[environment] = environment.defaultBaseURL
        }
        self.baseURLs = urls
        self.trustedCertificates = trustedCertificates
        self.signingKey = signingKey
        self.keyId = keyId
        self.teamId = teamId
        self.bundleId = bundleId
        self.requestTimeout = requestTimeout
        self.connectTimeout = connectTimeout
        self.keepAliveInterval = keepAliveInterval
        self.maximumIdleTime = maximumIdleTime
        self.maximumConcurrentStreams = maximumConcurrentStreams
    }

    /// `apns-topic` for Live Activity pushes: `<bundle>.push-type.liveactivity`.
    public var topic: String { topic(for: .liveactivity) }

    /// `apns-topic` for a push type: `<bundle>.push-type.liveactivity`, or the bare bundle id for `alert`.
    public func topic(for pushType: APNsPushType) -> String {
        switch pushType {
        case .liveactivity: "\(bundleId).push-type.liveactivity"
        case .alert: bundleId
        }
    }

    /// The base URL tokens of `environment` are sent to.
    public func baseURL(for environment: APNsEnvironment) -> String {
        baseURLs[environment] ?? environment.defaultBaseURL
    }

    /// The full URL of a request (a broadcast goes to the push host of its environment, like device pushes).
    public func url(for request: APNsRequest) -> String {
        baseURL(for: request.environment) + request.path(bundleId: bundleId)
    }

    /// The channel-management base URL of `environment`.
    public func channelsBaseURL(for environment: APNsEnvironment) -> String {
        channelsBaseURLs[environment] ?? environment.defaultChannelsBaseURL
    }

    /// The JWT signer for this key, key id and team.
    public var signer: ProviderTokenSigner { ProviderTokenSigner(key: signingKey, keyId: keyId, teamId: teamId) }
}

extension APNsConfiguration {
    /// Reads the configuration of contract §3 from the environment:
    /// `LIVEVISITS_APNS_URL` (both environments), `LIVEVISITS_APNS_SANDBOX_URL` /
    /// `LIVEVISITS_APNS_PRODUCTION_URL` (each wins over it), the same three for channel management
    /// (`LIVEVISITS_APNS_CHANNELS_URL`, `…_CHANNELS_SANDBOX_URL`, `…_CHANNELS_PRODUCTION_URL`),
    /// `LIVEVISITS_APNS_CA_FILE`,
    /// `LIVEVISITS_APNS_KEY_FILE` (P-256 `.p8`), `LIVEVISITS_APNS_KEY_ID`, `LIVEVISITS_APNS_TEAM_ID`,
    /// `LIVEVISITS_APNS_BUNDLE_ID`. Errors name the variable and never show a secret.
    public static func fromEnvironment(
        _ environment: [String: String] = ProcessInfo.processInfo.environment
    ) throws(APNsError) -> APNsConfiguration {
        func value(_ name: String) -> String? {
            guard let text = environment[name]?.trimmingCharacters(in: .whitespaces), !text.isEmpty else {
                return nil
            }
            return text
        }
        func required(_ name: String) throws(APNsError) -> String {
            guard let text = value(name) else {
                throw APNsError(code: .missingVariable, message: "\(name) is not set", variable: name)
            }
            return text
        }

        var urls: [APNsEnvironment: String] = [:]
        if let both = value("LIVEVISITS_APNS_URL") {
            let url = try normalizedBaseURL(both, variable: "LIVEVISITS_APNS_URL")
            urls[.sandbox] = url
            urls[.production] = url
        }
        if let sandbox = value("LIVEVISITS_APNS_SANDBOX_URL") {
            urls[.sandbox] = try normalizedBaseURL(sandbox, variable: "LIVEVISITS_APNS_SANDBOX_URL")
        }
        if let production = value("LIVEVISITS_APNS_PRODUCTION_URL") {
            urls[.production] = try normalizedBaseURL(production, variable: "LIVEVISITS_APNS_PRODUCTION_URL")
        }

        var channelURLs: [APNsEnvironment: String] = [:]
        if let both = value("LIVEVISITS_APNS_CHANNELS_URL") {
            let url = try normalizedBaseURL(both, variable: "LIVEVISITS_APNS_CHANNELS_URL")
            channelURLs[.sandbox] = url
            channelURLs[.production] = url
        }
        if let sandbox = value("LIVEVISITS_APNS_CHANNELS_SANDBOX_URL") {
            channelURLs[.sandbox] = try normalizedBaseURL(sandbox, variable: "LIVEVISITS_APNS_CHANNELS_SANDBOX_URL")
        }
        if let production = value("LIVEVISITS_APNS_CHANNELS_PRODUCTION_URL") {
            channelURLs[.production] = try normalizedBaseURL(
                production, variable: "LIVEVISITS_APNS_CHANNELS_PRODUCTION_URL")
        }

        let keyFile = try required("LIVEVISITS_APNS_KEY_FILE")
        let keyId = try required("LIVEVISITS_APNS_KEY_ID")
        let teamId = try required("LIVEVISITS_APNS_TEAM_ID")
        let bundleId = try required("LIVEVISITS_APNS_BUNDLE_ID")
        let key = try APNsSigningKey(contentsOfFile: keyFile, variable: "LIVEVISITS_APNS_KEY_FILE")
        let certificates = try value("LIVEVISITS_APNS_CA_FILE").map { path throws(APNsError) in
            try APNsTrustedCertificates(contentsOfFile: path, variable: "LIVEVISITS_APNS_CA_FILE")
        }
        var configuration = APNsConfiguration(
            baseURLs: urls, trustedCertificates: certificates, signingKey: key, keyId: keyId, teamId: teamId,
            bundleId: bundleId)
        configuration.channelsBaseURLs = channelURLs
        return configuration
    }

    /// Checks that `text` is an `https://host[:port]` URL and drops a trailing slash.
    static func normalizedBaseURL(_ text: String, variable: String) throws(APNsError) -> String {
        var url = text
        while url.hasSuffix("/") { url.removeLast() }
        guard let components = URLComponents(string: url), components.scheme?.lowercased() == "https",
            let host = components.host, !host.isEmpty, components.path.isEmpty, components.query == nil,
            components.user == nil
        else {
            throw APNsError(
                code: .invalidURL, message: "\(variable) must be an https://host[:port] base URL", variable: variable)
        }
        return url
    }
}
