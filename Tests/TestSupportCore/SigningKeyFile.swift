import Foundation

/// A fresh ES256 signing key in PKCS#8 PEM, the form of Apple's `.p8` files, made with the openssl CLI:
/// for the tests that run a worker process or an APNs client against the project's simulator.
public enum SigningKeyFile {
    /// Writes a new key to `path`, readable by its owner alone (`livevisits` refuses a key file others may read).
    public static func write(to path: String) async throws {
        let openssl = try requireTool("/usr/bin/openssl", installedBy: "openssl")
        let made = try await Subprocess.run(
            "/bin/sh",
            [
                "-c",
                "umask 077; '\(openssl)' ecparam -name prime256v1 -genkey -noout | '\(openssl)' pkcs8 -topk8 -nocrypt > '\(path)'",
            ])
        guard made.status == 0 else { throw Failed(detail: made.stderr) }
    }

    /// openssl refused.
    public struct Failed: Error, CustomStringConvertible {
        public let detail: String
        public var description: String { "openssl could not make a signing key: \(detail)" }
    }
}
