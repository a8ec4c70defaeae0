import Foundation
import Runtime
import Testing

@testable import APNs

@Suite(.timeLimit(.minutes(2))) struct JWTTests {
    @Test func tokenHasES256HeaderAndClaims() throws {
        let key = try TestKey.make()
        defer { key.remove() }
        let signer = ProviderTokenSigner(key: try APNsSigningKey(pem: key.pem), keyId: "ABC123DEFG", teamId: "TEAM123456")
        let token = try signer.mint(issuedAt: 1_790_000_000)
        let parts = token.jwt.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        #expect(parts.count == 3)
        #expect(!token.jwt.contains("=") && !token.jwt.contains("+") && !token.jwt.contains("/"))
        let header = try JSONSerialization.jsonObject(with: Data(try #require(Base64URL.decode(parts[0])))) as? [String: Any]
        let claims = try JSONSerialization.jsonObject(with: Data(try #require(Base64URL.decode(parts[1])))) as? [String: Any]
        #expect(header?["alg"] as? String == "ES256")
        #expect(header?["kid"] as? String == "ABC123DEFG")
        #expect(header?.count == 2)
        #expect(claims?["iss"] as? String == "TEAM123456")
        #expect((claims?["iat"] as? NSNumber)?.int64Value == 1_790_000_000)
        #expect(claims?.count == 2)
        // Byte for byte what tokens have always been: compact, keys sorted.
        #expect(Base64URL.decode(parts[0]) == Array(#"{"alg":"ES256","kid":"ABC123DEFG"}"#.utf8))
        #expect(Base64URL.decode(parts[1]) == Array(#"{"iat":1790000000,"iss":"TEAM123456"}"#.utf8))
        #expect(try #require(Base64URL.decode(parts[2])).count == 64)
        #expect(token.issuedAt == 1_790_000_000)
        #expect(!"\(token)".contains(token.jwt))
    }

    /// The signature checks out with the openssl CLI, which shares no code with the signer:
    /// r || s is turned back into DER here and `openssl dgst -verify` checks it over the signing input.
    @Test func signatureVerifiesWithOpenSSLCommandLine() throws {
        let key = try TestKey.make()
        defer { key.remove() }
        let signer = ProviderTokenSigner(key: try APNsSigningKey(pem: key.pem), keyId: "KEY1234567", teamId: "TEAM765432")
        for issuedAt in [Int64(1_790_000_000), 1_790_001_234] {
            let token = try signer.mint(issuedAt: issuedAt)
            let parts = token.jwt.split(separator: ".").map(String.init)
            let signingInput = parts[0] + "." + parts[1]
            let raw = try #require(Base64URL.decode(parts[2]))
            let inputFile = key.directory + "/input.txt"
            let signatureFile = key.directory + "/sig.der"
            try Data(signingInput.utf8).write(to: URL(fileURLWithPath: inputFile))
            try Data(DER.ecdsaSignature(raw)).write(to: URL(fileURLWithPath: signatureFile))
            let good = try OpenSSLTool.run(
                ["dgst", "-sha256", "-verify", key.publicKeyFile, "-signature", signatureFile, inputFile],
                allowFailure: true)
            #expect(good.status == 0, "\(good.output)")
            #expect(good.output.contains("Verified OK"))

            // A tampered signing input must fail, or the check above proves nothing.
            try Data((signingInput + "x").utf8).write(to: URL(fileURLWithPath: inputFile))
            let bad = try OpenSSLTool.run(
                ["dgst", "-sha256", "-verify", key.publicKeyFile, "-signature", signatureFile, inputFile],
                allowFailure: true)
            #expect(bad.status != 0)
        }
    }

    @Test func anotherKeyDoesNotVerify() throws {
        let key = try TestKey.make()
        let other = try TestKey.make()
        defer {
            key.remove()
            other.remove()
        }
        let token = try ProviderTokenSigner(key: try APNsSigningKey(pem: key.pem), keyId: "K", teamId: "T").mint(issuedAt: 1)
        let parts = token.jwt.split(separator: ".").map(String.init)
        let inputFile = key.directory + "/input.txt"
        let signatureFile = key.directory + "/sig.der"
        try Data((parts[0] + "." + parts[1]).utf8).write(to: URL(fileURLWithPath: inputFile))
        try Data(DER.ecdsaSignature(try #require(Base64URL.decode(parts[2])))).write(to: URL(fileURLWithPath: signatureFile))
        let result = try OpenSSLTool.run(
            ["dgst", "-sha256", "-verify", other.publicKeyFile, "-signature", signatureFile, inputFile],
            allowFailure: true)
        #expect(result.status != 0)
    }

    @Test func base64URLRoundTrips() {
        for length in 0..<70 {
            let bytes = (0..<length).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ 251) }
            let text = Base64URL.encode(bytes)
            #expect(!text.contains("="))
            #expect(Base64URL.decode(text) == bytes)
            #expect(
                text
                    == Data(bytes).base64EncodedString().replacingOccurrences(of: "+", with: "-")
                    .replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: ""))
        }
    }

    /// Only the one text of each byte string decodes: no padding, no other alphabet, no impossible
    /// length, no stray trailing bits (a signature whose last character was bumped must not verify).
    @Test func base64URLRefusesWhatIsNotCanonical() {
        #expect(Base64URL.decode("") == [])
        #expect(Base64URL.decode("_-8") == [0xFF, 0xEF])
        for text in ["QQ==", "QQ=", "Q", "QUJDR", "a+b/", "QR", "QUJ", "QUI\n", "QU I"] {
            #expect(Base64URL.decode(text) == nil, "\(text)")
        }
        #expect(Base64URL.decode("QQ") == [0x41])
        #expect(Base64URL.decode("QUI") == [0x41, 0x42])
        #expect(Base64URL.decode("QUE") == [0x41, 0x41])
    }
}

/// A minimal DER encoder for an ECDSA signature: SEQUENCE { INTEGER r, INTEGER s }.
enum DER {
    static func ecdsaSignature(_ raw: [UInt8]) -> [UInt8] {
        let r = integer(Array(raw[0..<32]))
        let s = integer(Array(raw[32..<64]))
        return [0x30] + length(r.count + s.count) + r + s
    }

    private static func integer(_ bytes: [UInt8]) -> [UInt8] {
        var value = Array(bytes.drop { $0 == 0 })
        if value.isEmpty { value = [0] }
        if value[0] & 0x80 != 0 { value.insert(0, at: 0) }
        return [0x02] + length(value.count) + value
    }

    private static func length(_ count: Int) -> [UInt8] {
        count < 0x80 ? [UInt8(count)] : [0x81, UInt8(count)]
    }
}
