import Foundation
import Runtime

/// The flags of `livevisits apns-sim`.
public struct SimulatorCommandOptions: Sendable, Equatable {
    public var host = "127.0.0.1"
    public var port: UInt16 = 0
    public var channelsPort: UInt16 = 0
    public var sandboxPort: UInt16 = 0
    public var certificateDirectory: String?
    public var publicKeyFile: String?
    public var teamID: String?
    public var keyID: String?
    public var topic: String?
    /// Print one line per push on stdout (default on; `--quiet` turns it off).
    public var printDeliveries = true
    public var help = false

    public init() {}

    /// The command's syntax: parsed as every `livevisits` command is (Runtime's `CommandSyntax`).
    public static let syntax = CommandSyntax(
        command: "livevisits apns-sim",
        summary:
            "A local APNs (HTTP/2 over TLS) for development and tests. Prints its URL and CA file, then one line per push, until SIGTERM/SIGINT.",
        options: [
            .value("--port", "N", "port to bind (default 0: a free one)"),
            .value(
                "--sandbox-port", "N",
                "port of the sandbox push listener, which answers apns-unique-id as Apple's development environment does (default 0: a free one)"
            ),
            .value("--channels-port", "N", "port of the channel-management listener (default 0: a free one)"),
            .value("--host", "ADDR", "address to bind (default 127.0.0.1)"),
            .value("--cert-dir", "DIR", "reuse ca.pem/server.pem/server-key.pem from DIR, or generate them there"),
            .value(
                "--public-key", "FILE",
                "PEM public key (or the .p8 private key) that signs provider tokens; default: $LIVEVISITS_APNS_KEY_FILE if set, else tokens are not verified"
            ),
            .value("--team-id", "ID", "required JWT iss (default $LIVEVISITS_APNS_TEAM_ID)"),
            .value("--key-id", "ID", "required JWT kid (default $LIVEVISITS_APNS_KEY_ID)"),
            .value("--topic", "BUNDLE_ID", "required bundle id or topic (default $LIVEVISITS_APNS_BUNDLE_ID)"),
            .flag("--quiet", "do not print a line per push"),
        ],
        details: "Control: GET /_sim/deliveries, POST /_sim/faults, POST /_sim/reset, GET /_sim/stats")

    public static var usage: String { syntax.usage }

    /// Parses flags (`--flag value` or `--flag=value`); environment variables fill what is not given.
    /// `--help` sets `help`; a bad flag is a `.usage` error.
    public static func parse(
        _ arguments: [String], environment: [String: String] = ProcessInfo.processInfo.environment
    ) throws(SimulatorError) -> SimulatorCommandOptions {
        var options = SimulatorCommandOptions()
        let parsed: ParsedArguments
        do {
            parsed = try syntax.parse(arguments)
            if let port = try parsed.integer("--port", in: 0...65535) { options.port = UInt16(port) }
            if let port = try parsed.integer("--sandbox-port", in: 0...65535) { options.sandboxPort = UInt16(port) }
            if let port = try parsed.integer("--channels-port", in: 0...65535) { options.channelsPort = UInt16(port) }
        } catch is HelpRequest {
            options.help = true
            return options
        } catch {
            throw SimulatorError(.usage, "\(error)")
        }
        options.host = parsed.value("--host") ?? options.host
        options.certificateDirectory = parsed.value("--cert-dir")
        options.publicKeyFile = parsed.value("--public-key")
        options.teamID = parsed.value("--team-id")
        options.keyID = parsed.value("--key-id")
        options.topic = parsed.value("--topic")
        options.printDeliveries = !parsed.has("--quiet")
        func env(_ name: String) -> String? { environment[name].flatMap { $0.isEmpty ? nil : $0 } }
        options.publicKeyFile = options.publicKeyFile ?? env("LIVEVISITS_APNS_KEY_FILE")
        options.teamID = options.teamID ?? env("LIVEVISITS_APNS_TEAM_ID")
        options.keyID = options.keyID ?? env("LIVEVISITS_APNS_KEY_ID")
        options.topic = options.topic ?? env("LIVEVISITS_APNS_BUNDLE_ID")
        return options
    }

    /// The simulator configuration these options describe (reads the key file).
    public func configuration() throws(SimulatorError) -> SimulatorConfiguration {
        var config = SimulatorConfiguration()
        config.host = host
        config.port = port
        config.sandboxPort = sandboxPort
        config.channelsPort = channelsPort
        config.tls = .generate(directory: certificateDirectory)
        config.bundleID = topic
        if let publicKeyFile {
            config.providerKeys = [try ProviderKey.load(file: publicKeyFile, teamID: teamID, keyID: keyID)]
        }
        return config
    }
}
