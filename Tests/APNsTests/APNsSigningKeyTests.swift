import Foundation
import Testing

@testable import APNs

@Suite(.timeLimit(.minutes(2))) struct APNsSigningKeyTests {
    @Test func acceptsP256() throws {
        let key = try TestKey.make()
        defer { key.remove() }
        let signingKey = try APNsSigningKey(contentsOfFile: key.keyFile)
        #expect(try signingKey.signES256(Array("hello".utf8)).count == 64)
        #expect(!"\(signingKey)".contains("BEGIN"))
    }

    @Test(arguments: [("EC", "secp384r1"), ("EC", "secp256k1"), ("RSA", ""), ("ED25519", "")])
    func refusesOtherKeys(algorithm: String, curve: String) throws {
        let key = try TestKey.make(curve: curve, algorithm: algorithm)
        defer { key.remove() }
        let error = #expect(throws: APNsError.self) { try APNsSigningKey(contentsOfFile: key.keyFile) }
        #expect(error?.code == .keyNotP256)
        #expect(error?.variable == "LIVEVISITS_APNS_KEY_FILE")
        #expect(error?.message.contains("LIVEVISITS_APNS_KEY_FILE") == true)
        try expectNoSecret(in: error, keyFile: key.keyFile)
    }

    @Test func refusesGarbageAndMissingFiles() throws {
        let directory = try OpenSSLTool.scratchDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let garbage = directory + "/garbage.p8"
        try Data("-----BEGIN PRIVATE KEY-----\nnot a key\n-----END PRIVATE KEY-----\n".utf8).write(
            to: URL(fileURLWithPath: garbage))
        let invalid = #expect(throws: APNsError.self) { try APNsSigningKey(contentsOfFile: garbage) }
        #expect(invalid?.code == .invalidKey)
        let missing = #expect(throws: APNsError.self) { try APNsSigningKey(contentsOfFile: directory + "/none.p8") }
        #expect(missing?.code == .keyFileUnreadable)
        #expect(missing?.message.contains("LIVEVISITS_APNS_KEY_FILE") == true)
    }

    /// An ASN.1 signature whose r and s are short still becomes 64 bytes, left-padded.
    @Test func derToRawPadsShortIntegers() throws {
        let der: [UInt8] = [0x30, 0x08, 0x02, 0x02, 0x01, 0x02, 0x02, 0x02, 0x00, 0xff]
        let raw = try APNsSigningKey.rawSignature(fromDER: der)
        #expect(raw.count == 64)
        #expect(raw[30] == 1 && raw[31] == 2 && raw[63] == 0xff && raw[62] == 0)
        #expect(raw[0..<30].allSatisfy { $0 == 0 })
    }

    private func expectNoSecret(in error: APNsError?, keyFile: String) throws {
        let pem = String(decoding: FileManager.default.contents(atPath: keyFile) ?? Data(), as: UTF8.self)
        let body = pem.split(separator: "\n").filter { !$0.hasPrefix("-----") }
        let text = "\(String(describing: error))"
        for line in body { #expect(!text.contains(line)) }
    }
}
