import Foundation
import Runtime

/// Runs the `openssl` command-line tool: an implementation independent of the code under test.
enum OpenSSLTool {
    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    /// Runs `openssl arguments…`; returns exit status and combined output.
    @discardableResult
    static func run(_ arguments: [String], allowFailure: Bool = false) throws -> (status: Int32, output: String) {
        let outcome = try ChildProcess("/usr/bin/openssl", arguments).runBlocking()
        let output = outcome.stdout + outcome.stderr
        if !allowFailure && outcome.status != 0 {
            throw Failure(description: "openssl \(arguments.joined(separator: " ")) failed: \(output)")
        }
        return (outcome.status, output)
    }

    /// A scratch directory removed by the caller.
    static func scratchDirectory() throws -> String {
        let path = NSTemporaryDirectory() + "apns-tests-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }
}

/// An APNs-style auth key made with the openssl CLI: `key.p8` (PKCS#8 P-256) and `pub.pem`.
struct TestKey {
    let directory: String
    var keyFile: String { directory + "/key.p8" }
    var publicKeyFile: String { directory + "/pub.pem" }

    /// A new P-256 key (or another curve / algorithm, to test refusals).
    static func make(curve: String = "prime256v1", algorithm: String = "EC") throws -> TestKey {
        let key = TestKey(directory: try OpenSSLTool.scratchDirectory())
        var options = ["genpkey", "-algorithm", algorithm, "-out", key.keyFile]
        if algorithm == "EC" { options += ["-pkeyopt", "ec_paramgen_curve:\(curve)"] }
        if algorithm == "RSA" { options += ["-pkeyopt", "rsa_keygen_bits:2048"] }
        try OpenSSLTool.run(options)
        try OpenSSLTool.run(["pkey", "-in", key.keyFile, "-pubout", "-out", key.publicKeyFile])
        return key
    }

    var pem: [UInt8] { [UInt8](FileManager.default.contents(atPath: keyFile) ?? Data()) }

    func remove() { try? FileManager.default.removeItem(atPath: directory) }
}
