import Testing

@testable import APNs

@Suite(.timeLimit(.minutes(2))) struct APNsConfigurationTests {
    private func environment(_ key: TestKey, _ extra: [String: String] = [:]) -> [String: String] {
        [
            "LIVEVISITS_APNS_KEY_FILE": key.keyFile, "LIVEVISITS_APNS_KEY_ID": "KEY1234567",
            "LIVEVISITS_APNS_TEAM_ID": "TEAM123456", "LIVEVISITS_APNS_BUNDLE_ID": "com.example.visits",
        ].merging(extra) { _, new in new }
    }

    @Test func defaultsToApplesHosts() throws {
        let key = try TestKey.make()
        defer { key.remove() }
        let configuration = try APNsConfiguration.fromEnvironment(environment(key))
        #expect(configuration.baseURL(for: .sandbox) == "https://api.sandbox.push.apple.com")
        #expect(configuration.baseURL(for: .production) == "https://api.push.apple.com")
        #expect(configuration.topic == "com.example.visits.push-type.liveactivity")
        #expect(configuration.keyId == "KEY1234567" && configuration.teamId == "TEAM123456")
        #expect(configuration.trustedCertificates == nil)
    }

    @Test func overridesRouteEachEnvironment() throws {
        let key = try TestKey.make()
        defer { key.remove() }
        let both = try APNsConfiguration.fromEnvironment(environment(key, ["LIVEVISITS_APNS_URL": "https://127.0.0.1:9443/"]))
        #expect(both.baseURL(for: .sandbox) == "https://127.0.0.1:9443")
        #expect(both.baseURL(for: .production) == "https://127.0.0.1:9443")

        let split = try APNsConfiguration.fromEnvironment(
            environment(
                key,
                [
                    "LIVEVISITS_APNS_URL": "https://127.0.0.1:9443",
                    "LIVEVISITS_APNS_PRODUCTION_URL": "https://localhost:9444",
                ]))
        #expect(split.baseURL(for: .sandbox) == "https://127.0.0.1:9443")
        #expect(split.baseURL(for: .production) == "https://localhost:9444")

        let sandboxOnly = try APNsConfiguration.fromEnvironment(
            environment(key, ["LIVEVISITS_APNS_SANDBOX_URL": "https://127.0.0.1:1"]))
        #expect(sandboxOnly.baseURL(for: .sandbox) == "https://127.0.0.1:1")
        #expect(sandboxOnly.baseURL(for: .production) == "https://api.push.apple.com")

        let request = APNsRequest(
            deviceToken: "abcdef01", environment: .production, priority: .low, expiration: 0,
            apnsId: "6F1C7A52-7F3B-4C8E-9E43-0A1B2C3D4E5F", body: [])
        #expect(split.url(for: request) == "https://localhost:9444/3/device/abcdef01")
    }

    @Test(arguments: [
        "LIVEVISITS_APNS_KEY_FILE", "LIVEVISITS_APNS_KEY_ID", "LIVEVISITS_APNS_TEAM_ID", "LIVEVISITS_APNS_BUNDLE_ID",
    ])
    func missingVariableIsNamed(variable: String) throws {
        let key = try TestKey.make()
        defer { key.remove() }
        var env = environment(key)
        env[variable] = nil
        let error = #expect(throws: APNsError.self) { try APNsConfiguration.fromEnvironment(env) }
        #expect(error?.code == .missingVariable)
        #expect(error?.variable == variable)
        #expect(error?.message.contains(variable) == true)
        env[variable] = "  "
        #expect(throws: APNsError.self) { try APNsConfiguration.fromEnvironment(env) }
    }

    @Test(arguments: [
        ("LIVEVISITS_APNS_URL", "http://127.0.0.1:1"), ("LIVEVISITS_APNS_SANDBOX_URL", "not a url"),
        ("LIVEVISITS_APNS_PRODUCTION_URL", "https://host/3/device"),
    ])
    func badURLIsNamed(variable: String, value: String) throws {
        let key = try TestKey.make()
        defer { key.remove() }
        let error = #expect(throws: APNsError.self) {
            try APNsConfiguration.fromEnvironment(environment(key, [variable: value]))
        }
        #expect(error?.code == .invalidURL)
        #expect(error?.variable == variable)
    }

    @Test func caFileIsLoadedOrRefusedByName() throws {
        let key = try TestKey.make()
        defer { key.remove() }
        let certificate = key.directory + "/ca.pem"
        try OpenSSLTool.run([
            "req", "-x509", "-new", "-key", key.keyFile, "-subj", "/CN=test-ca", "-days", "1", "-out", certificate,
        ])
        let configuration = try APNsConfiguration.fromEnvironment(environment(key, ["LIVEVISITS_APNS_CA_FILE": certificate]))
        #expect(configuration.trustedCertificates?.count == 1)

        let missing = #expect(throws: APNsError.self) {
            try APNsConfiguration.fromEnvironment(environment(key, ["LIVEVISITS_APNS_CA_FILE": key.directory + "/none.pem"]))
        }
        #expect(missing?.code == .caFileUnreadable)
        #expect(missing?.variable == "LIVEVISITS_APNS_CA_FILE")
        let notCertificate = #expect(throws: APNsError.self) {
            try APNsConfiguration.fromEnvironment(environment(key, ["LIVEVISITS_APNS_CA_FILE": key.publicKeyFile]))
        }
        #expect(notCertificate?.code == .invalidCAFile)
    }

    /// At start, production pushes sent anywhere but Apple, or an extra CA trusted for them, are said (one
    /// line each); Apple's hosts and no CA file say nothing.
    @Test func productionAwayFromAppleOrAnExtraCAIsWarnedOf() throws {
        let key = try TestKey.make()
        defer { key.remove() }
        #expect(try APNsConfiguration.fromEnvironment(environment(key)).productionWarnings.isEmpty)
        let sandboxOnly = try APNsConfiguration.fromEnvironment(
            environment(key, ["LIVEVISITS_APNS_SANDBOX_URL": "https://127.0.0.1:9443"]))
        #expect(sandboxOnly.productionWarnings.isEmpty, "a sandbox override leaves production on Apple")

        let elsewhere = try APNsConfiguration.fromEnvironment(
            environment(
                key,
                [
                    "LIVEVISITS_APNS_URL": "https://apns.example.net",
                    "LIVEVISITS_APNS_CHANNELS_URL": "https://push.apple.com.example.net",
                ]))
        #expect(elsewhere.productionWarnings.count == 2)
        #expect(elsewhere.productionWarnings.first { $0.contains("push requests go to apns.example.net") } != nil)
        #expect(
            elsewhere.productionWarnings.first { $0.contains("channel-management requests go to push.apple.com.example.net") }
                != nil)

        let certificate = key.directory + "/ca.pem"
        try OpenSSLTool.run([
            "req", "-x509", "-new", "-key", key.keyFile, "-subj", "/CN=test-ca", "-days", "1", "-out", certificate,
        ])
        let withCA = try APNsConfiguration.fromEnvironment(environment(key, ["LIVEVISITS_APNS_CA_FILE": certificate]))
        #expect(
            withCA.productionWarnings == [
                "LIVEVISITS_APNS_CA_FILE adds 1 trusted CA certificate(s) for every APNs connection, production's included"
            ])
    }
}
