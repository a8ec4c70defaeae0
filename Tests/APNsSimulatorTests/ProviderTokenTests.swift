import APNsSimulator
import Foundation
import Runtime
import Testing

@Suite("Provider tokens (JWT) are verified like APNs does", .timeLimit(.minutes(2)))
struct ProviderTokenTests {
    @Test("a token signed by another key, with an unknown kid or iss, or tampered, is InvalidProviderToken")
    func invalidTokens() async throws {
        try await withSimulator { h in
            let now = Int64(Date().timeIntervalSince1970)
            let stranger = try await TestSigningKey.make(teamID: h.key.teamID, keyID: h.key.keyID)
            let foreign = try await stranger.jwt(issuedAt: now)
            let unknownKid = try await h.key.jwt(issuedAt: now, keyID: "OTHERKEY00")
            let unknownIss = try await h.key.jwt(issuedAt: now, teamID: "OTHERTEAM0")
            let wrongAlg = try await h.key.jwt(issuedAt: now, algorithm: "HS256")
            var parts = h.jwt.split(separator: ".").map(String.init)
            parts[1] = TestSigningKey.base64URL(Array("{\"iss\":\"\(h.key.teamID)\",\"iat\":\(now - 5)}".utf8))
            let tampered = parts.joined(separator: ".")

            for (name, jwt) in [
                ("foreign key", foreign), ("unknown kid", unknownKid), ("unknown iss", unknownIss), ("HS256", wrongAlg),
                ("tampered claims", tampered),
            ] {
                let response = try await h.push(headers: ["authorization": "bearer \(jwt)"])
                #expect(response.status == 403, "\(name)")
                #expect(response.reason == "InvalidProviderToken", "\(name): \(response.body)")
            }
            let good = try await h.push()
            #expect(good.status == 200, "\(good.body)")
        }
    }

    @Test("iat older than an hour is ExpiredProviderToken; iat in the future is InvalidProviderToken")
    func tokenAge() async throws {
        try await withSimulator { h in
            let now = Int64(Date().timeIntervalSince1970)
            let old = try await h.key.jwt(issuedAt: now - 3700)
            let future = try await h.key.jwt(issuedAt: now + 600)
            let fiftyMinutes = try await h.key.jwt(issuedAt: now - 3000)

            let expired = try await h.push(headers: ["authorization": "bearer \(old)"])
            #expect(expired.status == 403)
            #expect(expired.reason == "ExpiredProviderToken")
            let early = try await h.push(headers: ["authorization": "bearer \(future)"])
            #expect(early.status == 403)
            #expect(early.reason == "InvalidProviderToken")
            let fine = try await h.push(headers: ["authorization": "bearer \(fiftyMinutes)"])
            #expect(fine.status == 200, "\(fine.body)")
            let recorded = h.simulator.deliveries()
            #expect(recorded.map(\.providerToken?.issuedAt) == [now - 3700, now + 600, now - 3000])
        }
    }

    @Test("a token ages on the simulator's clock: the same JWT expires once the clock passes an hour")
    func tokenAgesWithInjectedClock() async throws {
        let clock = ManualClock(now: Date().timeIntervalSince1970.rounded(.down))
        try await withSimulator(clock: clock) { h in
            #expect(try await h.push().status == 200)
            clock.advance(by: 3599)
            #expect(try await h.push().status == 200)
            clock.advance(by: 2)
            let late = try await h.push()
            #expect(late.status == 403)
            #expect(late.reason == "ExpiredProviderToken")
        }
    }

    @Test("a PEM private key (.p8 style) can be configured: its public half verifies")
    func privateKeyPEMAccepted() async throws {
        let key = try await TestSigningKey.make()
        let pem = try String(contentsOfFile: key.privateKeyPath, encoding: .utf8)
        var config = SimulatorConfiguration()
        config.providerKeys = [ProviderKey(teamID: key.teamID, keyID: key.keyID, publicKeyPEM: pem)]
        #expect(throws: Never.self) { try APNsSimulator(configuration: config) }
    }

    @Test("a key that is not a P-256 key or not a key at all is refused at construction")
    func badKeysRefused() async throws {
        let dir = TestFiles.scratch()
        let rsa = dir + "/rsa.pem"
        let made = try await ProcessRunner.run(
            "openssl", ["genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:1024", "-out", rsa])
        #expect(made.status == 0)
        let secp384 = dir + "/p384.pem"
        _ = try await ProcessRunner.run("openssl", ["ecparam", "-name", "secp384r1", "-genkey", "-noout", "-out", secp384])
        for (path, name) in [(rsa, "RSA"), (secp384, "P-384")] {
            var config = SimulatorConfiguration()
            config.providerKeys = [try ProviderKey.load(file: path)]
            #expect(throws: SimulatorError.self, "\(name)") { try APNsSimulator(configuration: config) }
        }
        var garbage = SimulatorConfiguration()
        garbage.providerKeys = [ProviderKey(publicKeyPEM: "-----BEGIN PUBLIC KEY-----\nnope\n-----END PUBLIC KEY-----\n")]
        #expect(throws: SimulatorError.self) { try APNsSimulator(configuration: garbage) }
        #expect(throws: SimulatorError.self) { try ProviderKey.load(file: dir + "/missing.pem") }
    }
}
