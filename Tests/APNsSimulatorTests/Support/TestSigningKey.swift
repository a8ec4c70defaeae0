import Foundation

/// An ES256 key made and used with the `openssl` command-line tool, so that the JWTs the tests
/// present are signed by code independent of the simulator's verifier.
struct TestSigningKey: Sendable {
    let directory: String
    let privateKeyPath: String
    let publicKeyPEM: String
    let teamID: String
    let keyID: String

    static func make(teamID: String = "TEAM123456", keyID: String = "KEY1234567") async throws -> TestSigningKey {
        let dir = TestFiles.scratch()
        let key = dir + "/key.pem"
        let pub = dir + "/pub.pem"
        let gen = try await ProcessRunner.run("openssl", ["ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", key])
        guard gen.status == 0 else { throw TestFailure("openssl ecparam failed: \(gen.stderr)") }
        let export = try await ProcessRunner.run("openssl", ["pkey", "-in", key, "-pubout", "-out", pub])
        guard export.status == 0 else { throw TestFailure("openssl pkey failed: \(export.stderr)") }
        let pem = try String(contentsOfFile: pub, encoding: .utf8)
        return TestSigningKey(directory: dir, privateKeyPath: key, publicKeyPEM: pem, teamID: teamID, keyID: keyID)
    }

    /// A signed provider token with `iat` = `issuedAt`.
    func jwt(issuedAt: Int64, keyID: String? = nil, teamID: String? = nil, algorithm: String = "ES256") async throws -> String {
        let header = "{\"alg\":\"\(algorithm)\",\"kid\":\"\(keyID ?? self.keyID)\"}"
        let claims = "{\"iss\":\"\(teamID ?? self.teamID)\",\"iat\":\(issuedAt)}"
        let input = TestSigningKey.base64URL(Array(header.utf8)) + "." + TestSigningKey.base64URL(Array(claims.utf8))
        let dir = TestFiles.scratch()
        let inputPath = TestFiles.write(input, in: dir, name: "input")
        let sigPath = dir + "/sig.der"
        let sign = try await ProcessRunner.run(
            "openssl", ["dgst", "-sha256", "-sign", privateKeyPath, "-out", sigPath, inputPath])
        guard sign.status == 0, let der = FileManager.default.contents(atPath: sigPath) else {
            throw TestFailure("openssl dgst failed: \(sign.stderr)")
        }
        try? FileManager.default.removeItem(atPath: dir)
        return input + "." + TestSigningKey.base64URL(try TestSigningKey.rawSignature(fromDER: Array(der)))
    }

    static func base64URL(_ bytes: [UInt8]) -> String {
        Data(bytes).base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    /// DER `SEQUENCE { INTEGER r, INTEGER s }` to the 64-byte r||s of JWS.
    static func rawSignature(fromDER der: [UInt8]) throws -> [UInt8] {
        var i = 0
        func next() throws -> UInt8 {
            guard i < der.count else { throw TestFailure("short DER") }
            defer { i += 1 }
            return der[i]
        }
        func length() throws -> Int {
            let first = try next()
            if first < 0x80 { return Int(first) }
            var value = 0
            for _ in 0..<(first & 0x7F) { value = value << 8 | Int(try next()) }
            return value
        }
        guard try next() == 0x30 else { throw TestFailure("not a DER sequence") }
        _ = try length()
        var parts: [[UInt8]] = []
        for _ in 0..<2 {
            guard try next() == 0x02 else { throw TestFailure("not a DER integer") }
            let n = try length()
            guard i + n <= der.count else { throw TestFailure("short DER integer") }
            var bytes = Array(der[i..<i + n])
            i += n
            while bytes.count > 32, bytes.first == 0 { bytes.removeFirst() }
            parts.append([UInt8](repeating: 0, count: 32 - bytes.count) + bytes)
        }
        return parts[0] + parts[1]
    }
}

struct TestFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
