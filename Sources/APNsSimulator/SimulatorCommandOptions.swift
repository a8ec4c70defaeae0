import Foundation

/// The flags of `livevisits apns-sim`.
public struct SimulatorCommandOptions: Sendable, Equatable {
    public var host = "127.0.0.1"
    public var port: UInt16 = 0
    public var certificateDirectory: String?
    public var publicKeyFile: String?
    public var teamID: String?
    public var keyID: String?
    public var topic: String?
    /// Print one line per push on stdout (default on; `--quiet` turns it off).
    public var printDeliveries = true
    public var help = false

    public init() {}

    public static let usage = """
        usage: livevisits apns-sim [--port N] [--host ADDR] [--cert-dir DIR] [--public-key FILE]
                                   [--team-id ID] [--key-id ID] [--topic BUNDLE_ID] [--quiet]
          A local APNs (HTTP/2 over TLS) for development and tests. Prints its URL and CA file, then
          one line per push, until SIGTERM/SIGINT.
          --port N           port to bind (default 0: a free one)
          --cert-dir DIR     reuse ca.pem/server.pem/server-key.pem from DIR, or generate them there
          --public-key FILE  PEM public key (or the .p8 private key) that signs provider tokens;
                             default: $LIVEVISITS_APNS_KEY_FILE if set, else tokens are not verified
          --team-id ID       required JWT iss (default $LIVEVISITS_APNS_TEAM_ID)
          --key-id ID        required JWT kid (default $LIVEVISITS_APNS_KEY_ID)
          --topic BUNDLE_ID  required bundle id or topic (default $LIVEVISITS_APNS_BUNDLE_ID)
          Control: GET /_sim/deliveries, POST /_sim/faults, POST /_sim/reset, GET /_sim/stats
        """

    /// Parses flags (`--flag value` or `--flag=value`); environment variables fill what is not given.
    public static func parse(
        _ arguments: [String], environment: [String: String] = ProcessInfo.processInfo.environment
    ) throws(SimulatorError) -> SimulatorCommandOptions {
        var options = SimulatorCommandOptions()
        var rest = arguments[...]
        while let argument = rest.popFirst() {
            var flag = argument
            var inline: String?
            if let eq = argument.firstIndex(of: "="), argument.hasPrefix("--") {
                flag = String(argument[..<eq])
                inline = String(argument[argument.index(after: eq)...])
            }
            func value() throws(SimulatorError) -> String {
                if let inline { return inline }
                guard let next = rest.popFirst(), !next.hasPrefix("--") else {
                    throw SimulatorError(.usage, "\(flag) needs a value")
                }
                return next
            }
            switch flag {
            case "--port":
                let text = try value()
                guard let port = UInt16(text) else { throw SimulatorError(.usage, "--port must be 0…65535, not \(text)") }
                options.port = port
            case "--host": options.host = try value()
            case "--cert-dir": options.certificateDirectory = try value()
            case "--public-key": options.publicKeyFile = try value()
            case "--team-id": options.teamID = try value()
            case "--key-id": options.keyID = try value()
            case "--topic": options.topic = try value()
            case "--quiet": options.printDeliveries = false
            case "--help", "-h": options.help = true
            default: throw SimulatorError(.usage, "unknown argument \(argument)")
            }
        }
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
        config.tls = .generate(directory: certificateDirectory)
        config.bundleID = topic
        if let publicKeyFile {
            config.providerKeys = [try ProviderKey.load(file: publicKeyFile, teamID: teamID, keyID: keyID)]
        }
        return config
    }
}
