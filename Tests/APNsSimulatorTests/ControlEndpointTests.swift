import APNsSimulator
import Foundation
import Runtime
import TestSupportCore
import Testing

@Suite("Control endpoint, printout and command line", .timeLimit(.minutes(2)))
struct ControlEndpointTests {
    @Test("GET /_sim/deliveries lists what was received; POST /_sim/faults and /_sim/reset act")
    func controlRoutes() async throws {
        try await withSimulator { h in
            #expect(try await h.push(token: SimulatorHarness.token(1)).status == 200)
            #expect(try await h.push(token: SimulatorHarness.token(2), headers: ["apns-priority": "3"]).status == 400)

            let listed = try await h.control("GET", "/_sim/deliveries")
            #expect(listed.status == 200)
            let list = try #require(try JSONSerialization.jsonObject(with: Data(listed.body.utf8)) as? [[String: Any]])
            #expect(list.count == 2)
            #expect(list[0]["status"] as? Int == 200)
            #expect(list[0]["token"] as? String == SimulatorHarness.token(1))
            #expect((list[0]["providerToken"] as? [String: Any])?["kid"] as? String == h.key.keyID)
            #expect(((list[0]["body"] as? [String: Any])?["aps"] as? [String: Any])?["event"] as? String == "update")
            #expect((list[0]["headers"] as? [String: Any])?["authorization"] == nil)
            #expect(list[1]["reason"] as? String == "BadPriority")
            #expect(!listed.body.contains(h.jwt))

            let filtered = try await h.control("GET", "/_sim/deliveries?token=\(SimulatorHarness.token(2))")
            let one = try #require(try JSONSerialization.jsonObject(with: Data(filtered.body.utf8)) as? [[String: Any]])
            #expect(one.count == 1)

            let faults = try await h.control(
                "POST", "/_sim/faults",
                body:
                    #"{"failNext":{"count":1,"status":429,"reason":"TooManyRequests"},"unregister":[{"token":"\#(SimulatorHarness.token(5))","timestamp":1790000000000}]}"#
            )
            #expect(faults.status == 200, "\(faults.body)")
            let throttled = try await h.push(token: SimulatorHarness.token(1))
            #expect(throttled.status == 429)
            #expect(throttled.reason == "TooManyRequests")
            let gone = try await h.push(token: SimulatorHarness.token(5))
            #expect(gone.status == 410)

            let bad = try await h.control("POST", "/_sim/faults", body: "{\"failNext\": 3}")
            #expect(bad.status == 400)
            #expect(bad.body.contains("failNext: expected an object, got a number"), "\(bad.body)")
            let misspelt = try await h.control("POST", "/_sim/faults", body: #"{"failnext":{"status":429,"reason":"x"}}"#)
            #expect(misspelt.status == 400)
            #expect(misspelt.body.contains("failnext: unknown field"), "\(misspelt.body)")
            let badMode = try await h.control(
                "POST", "/_sim/faults", body: #"{"dropConnection":{"afterRequests":1,"mode":"reset"}}"#)
            #expect(badMode.status == 400)
            #expect(badMode.body.contains("dropConnection.mode"), "\(badMode.body)")
            let everyField = try await h.control(
                "POST", "/_sim/faults",
                body:
                    #"{"clear":true,"failFraction":{"fraction":0,"status":500,"reason":"InternalServerError","seed":7},"latency":{"milliseconds":0},"dropConnection":{"afterRequests":1000,"mode":"goaway"},"expireProviderTokens":false}"#
            )
            #expect(everyField.status == 200, "\(everyField.body)")
            #expect(try await h.control("POST", "/_sim/faults", body: #"{"clear":true}"#).status == 200)
            let unknown = try await h.control("GET", "/_sim/nothing")
            #expect(unknown.status == 404)

            let reset = try await h.control("POST", "/_sim/reset")
            #expect(reset.status == 200)
            #expect(h.simulator.deliveries().isEmpty)
            #expect(try await h.push(token: SimulatorHarness.token(5)).status == 200)

            let stats = try await h.control("GET", "/_sim/stats")
            #expect(stats.body.contains("\"connectionsAccepted\""))
        }
    }

    @Test("the one-line printout names event, priority, alert, content-state and dismissal-date, not the token")
    func summaryLine() async throws {
        try await withSimulator { h in
            let update = try await h.push()
            let end = try await h.push(body: SimulatorHarness.endBody(), headers: ["apns-priority": "10"])
            #expect(update.status == 200 && end.status == 200)
            let lines = h.simulator.deliveries().map(\.summaryLine)
            #expect(lines[0].contains(" 200 update p10 "))
            #expect(lines[0].contains("alert=\"Service visit\""))
            #expect(lines[0].contains("status=nearby"))
            #expect(lines[0].contains("kilometresAway=1.2"))
            #expect(lines[0].contains("stale-date=1790000600"))
            #expect(lines[1].contains(" end p10 "))
            #expect(lines[1].contains("dismissal-date=1790007600"))
            #expect(lines.allSatisfy { !$0.contains(SimulatorHarness.token()) && !$0.contains(h.jwt) })
        }
    }

    @Test("a hand-built record prints the same way; an error line shows status and reason")
    func summaryOfHandBuiltRecord() {
        let failed = SimulatedDelivery(
            sequence: 1, receivedAt: 3600 * 5 + 61.5, path: "/3/device/ab", deviceToken: "ab",
            headers: [("apns-priority", "5")], payload: SimulatorHarness.startBody(), status: 410, reason: "Unregistered",
            apnsID: "x")
        #expect(failed.summaryLine.hasPrefix("05:01:01.500 410 Unregistered start p5 token="))
        #expect(failed.summaryLine.contains("alert=\"Visit booked\""))
        // The body says `14.0`; numbers print as the one JSON writer writes them (as the product sends them).
        #expect(failed.summaryLine.contains("kilometresAway=14}"))
    }

    @Test("command-line flags parse, with environment defaults; bad flags are usage errors")
    func commandFlags() throws {
        let options = try SimulatorCommandOptions.parse(
            ["--port", "9443", "--cert-dir=/tmp/x", "--topic", "com.example.app", "--quiet"],
            environment: ["LIVEVISITS_APNS_TEAM_ID": "TEAM", "LIVEVISITS_APNS_KEY_ID": "KID"])
        #expect(options.port == 9443)
        #expect(options.certificateDirectory == "/tmp/x")
        #expect(options.topic == "com.example.app")
        #expect(options.teamID == "TEAM" && options.keyID == "KID")
        #expect(!options.printDeliveries)
        for bad in [["--port", "x"], ["--bogus"], ["--public-key"], ["--port", "70000"]] {
            do {
                _ = try SimulatorCommandOptions.parse(bad, environment: [:])
                Issue.record("\(bad) parsed")
            } catch {
                #expect(error.isUsageError, "\(bad)")
            }
        }
    }

    @Test("a certificate directory is reused across starts, so clients keep trusting the same CA")
    func certificateDirectoryReused() async throws {
        let dir = TestFiles.scratch()
        var config = SimulatorConfiguration()
        config.tls = .generate(directory: dir)
        let first = try APNsSimulator(configuration: config)
        let e1 = try await first.start()
        await first.stop()
        let ca = try String(contentsOfFile: e1.caFile, encoding: .utf8)
        let second = try APNsSimulator(configuration: config)
        try await withResource({ try await second.start() }, close: { _ in await second.stop() }) { e2 in
            #expect(e2.caFile == e1.caFile)
            #expect(try String(contentsOfFile: e2.caFile, encoding: .utf8) == ca)
            let verify = try await ProcessRunner.run("openssl", ["verify", "-CAfile", e1.caFile, dir + "/server.pem"])
            #expect(verify.status == 0, "\(verify.stdout) \(verify.stderr)")
        }
    }
}

@Suite("Lifecycle", .timeLimit(.minutes(2)))
struct LifecycleTests {
    @Test("as a Service, run() serves until its task is cancelled, then the port is closed")
    func runsAsService() async throws {
        let h = try await SimulatorHarness.start()
        let task = Task { try await h.simulator.run() }
        #expect(try await h.push().status == 200)
        task.cancel()
        try await task.value
        #expect(h.simulator.statistics().connectionsOpen == 0)
        let refused = try await h.push()
        #expect(refused.status == 0)
        #expect(refused.curlExit != 0)
        await #expect(throws: SimulatorError.self) { _ = try await h.simulator.start() }
    }
}

@Suite("livevisits apns-sim", .timeLimit(.minutes(2)))
struct CommandTests {
    @Test("runCommand serves on the given port with the given key until SIGTERM")
    func runCommandUntilSigterm() async throws {
        _ = SignalWatcher.shared  // SIGTERM is now delivered to the watcher, not fatal
        let key = try await TestSigningKey.make()
        let dir = TestFiles.scratch()
        let pub = TestFiles.write(key.publicKeyPEM, in: dir, name: "pub.pem")
        let port = try CommandTests.freePort()
        let task = Task {
            try await APNsSimulator.runCommand(arguments: [
                "--port", String(port), "--cert-dir", dir, "--public-key", pub, "--team-id", key.teamID, "--key-id",
                key.keyID, "--topic", SimulatorHarness.bundleID, "--quiet",
            ])
        }
        let ca = dir + "/ca.pem"
        try await eventually("apns-sim answering on port \(port)", pollingEvery: 0.1) {
            try await ProcessRunner.run("curl", ["-sS", "--http2", "--cacert", ca, "https://127.0.0.1:\(port)/_sim/stats"])
                .status == 0
        }
        let jwt = try await key.jwt(issuedAt: Int64(Date().timeIntervalSince1970))
        let push = try await ProcessRunner.run(
            "curl",
            [
                "-sS", "--http2", "--cacert", ca, "-H", "apns-push-type: liveactivity", "-H",
                "apns-topic: \(SimulatorHarness.topic)", "-H", "authorization: bearer \(jwt)", "--data-binary",
                SimulatorHarness.updateBody(), "-o", "/dev/null", "-w", "%{http_code}",
                "https://127.0.0.1:\(port)/3/device/\(SimulatorHarness.token())",
            ])
        #expect(push.stdout == "200", "\(push.stderr)")
        kill(getpid(), SIGTERM)
        try await task.value
    }

    static func freePort() throws -> UInt16 {
        guard let port = LoopbackPort.bindable() else { throw TestFailure("bind failed") }
        return port
    }
}
