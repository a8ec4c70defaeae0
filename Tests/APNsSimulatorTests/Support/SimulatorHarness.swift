import APNsSimulator
import Foundation
import Runtime
import TestSupportCore

/// What curl got back for one request.
struct PushResponse: Sendable {
    var status: Int
    var body: String
    var headers: [String: String]
    var httpVersion: String
    var curlExit: Int32
    var curlError: String

    /// The `reason` of an APNs error body.
    var reason: String? {
        guard let data = body.data(using: .utf8),
            let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any]
        else { return nil }
        return object["reason"] as? String
    }

    var json: [String: Any]? {
        guard let data = body.data(using: .utf8) else { return nil }
        return try? JSONSerialization.jsonObject(with: data) as? [String: Any]
    }
}

/// A running simulator with a signing key, and a curl-based client for it.
struct SimulatorHarness: Sendable {
    static let bundleID = "com.example.fieldservice"
    static let topic = bundleID + ".push-type.liveactivity"

    let simulator: APNsSimulator
    let endpoint: SimulatorEndpoint
    let key: TestSigningKey
    let jwt: String

    static func start(
        bundleID: String? = SimulatorHarness.bundleID, clock: (any WallClock)? = nil,
        configure: (inout SimulatorConfiguration) -> Void = { _ in }
    ) async throws -> SimulatorHarness {
        let key = try await TestSigningKey.make()
        var config = SimulatorConfiguration()
        config.providerKeys = [ProviderKey(teamID: key.teamID, keyID: key.keyID, publicKeyPEM: key.publicKeyPEM)]
        config.bundleID = bundleID
        config.logger = Logger(label: "apns-sim-test")
        if let clock { config.clock = clock }
        configure(&config)
        let simulator = try APNsSimulator(configuration: config)
        let endpoint = try await simulator.start()
        let now = Int64((clock ?? SystemClock()).now())
        let jwt = try await key.jwt(issuedAt: now)
        return SimulatorHarness(simulator: simulator, endpoint: endpoint, key: key, jwt: jwt)
    }

    static func token(_ n: Int = 1) -> String {
        String(repeating: String(format: "%02x", n % 256), count: 32)
    }

    static func updateBody(timestamp: Int64 = Int64(Date().timeIntervalSince1970), status: String = "nearby") -> String {
        """
        {"aps":{"timestamp":\(timestamp),"event":"update","content-state":{"technicianName":"Sam",\
        "avatarSymbol":"person.crop.circle","vanDescription":"White van, blue stripe","arrivalStartEpoch":1790000300,\
        "arrivalEndEpoch":1790000900,"status":"\(status)","kilometresAway":1.2},"stale-date":1790000600,\
        "relevance-score":100,"alert":{"title":"Service visit","body":"Your technician is a few minutes away.",\
        "sound":"default"}}}
        """
    }

    static func startBody(alert: Bool = true) -> String {
        let alertText = alert ? ",\"alert\":{\"title\":\"Visit booked\",\"body\":\"Follow your technician live.\"}" : ""
        return """
            {"aps":{"timestamp":1789990000,"event":"start","attributes-type":"ServiceVisitAttributes",\
            "attributes":{"customerFirstName":"Alex","serviceAddress":"12 Elm Row","jobSummary":"Boiler check",\
            "visitId":"v-1001"},"content-state":{"technicianName":"Sam","avatarSymbol":"person.crop.circle",\
            "vanDescription":"White van, blue stripe","arrivalStartEpoch":1790000300,"arrivalEndEpoch":1790000900,\
            "status":"scheduled","kilometresAway":14.0},"input-push-token":1\(alertText)}}
            """
    }

    static func endBody() -> String {
        """
        {"aps":{"timestamp":1790004000,"event":"end","dismissal-date":1790007600,"content-state":{"technicianName":"Sam",\
        "avatarSymbol":"person.crop.circle","vanDescription":"White van, blue stripe","arrivalStartEpoch":1790000300,\
        "arrivalEndEpoch":1790000300,"status":"completed","kilometresAway":0}}}
        """
    }

    /// The headers a correct push carries (nil values are left out).
    func standardHeaders(jwt: String? = nil) -> [String: String] {
        [
            "apns-push-type": "liveactivity", "apns-topic": SimulatorHarness.topic, "apns-priority": "10",
            "apns-expiration": "0", "authorization": "bearer \(jwt ?? self.jwt)",
        ]
    }

    /// Sends one request with curl over HTTP/2 and TLS.
    func push(
        token: String = SimulatorHarness.token(), body: String? = SimulatorHarness.updateBody(),
        headers overrides: [String: String?] = [:], method: String = "POST", path: String? = nil,
        baseURL: String? = nil
    ) async throws -> PushResponse {
        var headers = standardHeaders()
        for (name, value) in overrides { headers[name] = value }
        let dir = TestFiles.scratch()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        var args = ["-sS", "--http2", "--cacert", endpoint.caFile, "-X", method, "--path-as-is"]
        for (name, value) in headers.sorted(by: { $0.key < $1.key }) { args += ["-H", "\(name): \(value)"] }
        if let body {
            args += ["--data-binary", "@" + TestFiles.write(body, in: dir, name: "body.json")]
        }
        args += ["-D", dir + "/headers", "-o", dir + "/response", "-w", "%{http_code} %{http_version}"]
        args.append((baseURL ?? endpoint.url) + (path ?? "/3/device/\(token)"))
        let result = try await ProcessRunner.run("curl", args)
        let parts = result.stdout.split(separator: " ")
        var responseHeaders: [String: String] = [:]
        let headerText = (try? String(contentsOfFile: dir + "/headers", encoding: .utf8)) ?? ""
        for line in headerText.split(whereSeparator: \.isNewline) {
            let kv = line.split(separator: ":", maxSplits: 1)
            if kv.count == 2 {
                responseHeaders[kv[0].lowercased()] = kv[1].trimmingCharacters(in: .whitespaces)
            }
        }
        return PushResponse(
            status: Int(parts.first ?? "") ?? 0,
            body: (try? String(contentsOfFile: dir + "/response", encoding: .utf8)) ?? "",
            headers: responseHeaders, httpVersion: parts.count > 1 ? String(parts[1]) : "",
            curlExit: result.status, curlError: result.stderr)
    }

    /// Calls the control endpoint.
    func control(_ method: String, _ path: String, body: String? = nil) async throws -> PushResponse {
        var args = ["-sS", "--http2", "--cacert", endpoint.caFile, "-X", method, "-w", "\n%{http_code}"]
        if let body { args += ["--data-binary", body] }
        args.append(endpoint.url + path)
        let result = try await ProcessRunner.run("curl", args)
        var lines = result.stdout.components(separatedBy: "\n")
        let status = Int(lines.popLast() ?? "") ?? 0
        return PushResponse(
            status: status, body: lines.joined(separator: "\n"), headers: [:], httpVersion: "2", curlExit: result.status,
            curlError: result.stderr)
    }

    /// Sends several pushes with one curl: sequentially on one connection, or in parallel (`-Z`)
    /// multiplexed. Returns the HTTP status of each transfer in order (0 when it failed).
    func pushMany(
        tokens: [String], parallel: Bool, parallelMax: Int = 100, body: String = SimulatorHarness.updateBody()
    ) async throws -> (statuses: [Int], result: ProcessResult) {
        let dir = TestFiles.scratch()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let bodyPath = TestFiles.write(body, in: dir, name: "body.json")
        var config = ""
        for (name, value) in standardHeaders() { config += "header = \"\(name): \(value)\"\n" }
        config += "data-binary = \"@\(bodyPath)\"\n"
        for token in tokens {
            config += "url = \"\(endpoint.url)/3/device/\(token)\"\n"
            config += "output = \"/dev/null\"\n"
        }
        let configPath = TestFiles.write(config, in: dir, name: "curl.conf")
        var args = ["-sS", "--http2", "--cacert", endpoint.caFile, "-K", configPath, "-w", "%{http_code}\n"]
        if parallel { args += ["-Z", "--parallel-max", String(parallelMax)] }
        let result = try await ProcessRunner.run("curl", args)
        let statuses = result.stdout.split(whereSeparator: \.isNewline).map { Int($0) ?? 0 }
        return (statuses, result)
    }
}

/// Lends a running simulator (see `SimulatorHarness.start`) to `body` and stops it once `body` has returned or
/// thrown.
func withSimulator<Result>(
    bundleID: String? = SimulatorHarness.bundleID, clock: (any WallClock)? = nil,
    configure: (inout SimulatorConfiguration) -> Void = { _ in },
    isolation: isolated (any Actor)? = #isolation,
    _ body: (SimulatorHarness) async throws -> Result
) async throws -> Result {
    try await withResource(
        { try await SimulatorHarness.start(bundleID: bundleID, clock: clock, configure: configure) },
        close: { await $0.simulator.stop() }, body)
}
