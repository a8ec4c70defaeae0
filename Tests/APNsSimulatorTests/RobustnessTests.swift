import APNsSimulator
import Foundation
import Testing

@Suite("Concurrency and bad input", .timeLimit(.minutes(2)))
struct RobustnessTests {
    @Test("hundreds of pushes multiplexed on one connection with curl --parallel, plus several connections")
    func manyConcurrentStreams() async throws {
        try await withSimulator { h in
            h.simulator.addLatency(seconds: 0.2)
            let tokens = (0..<300).map { SimulatorHarness.token($0) }
            async let a = h.pushMany(tokens: tokens, parallel: true, parallelMax: 100)
            async let b = h.pushMany(tokens: Array(tokens.prefix(50)), parallel: true, parallelMax: 50)
            async let c = h.pushMany(tokens: Array(tokens.prefix(50)), parallel: true, parallelMax: 50)
            let (ra, rb, rc) = try await (a, b, c)
            #expect(ra.statuses.count == 300)
            #expect(ra.statuses.allSatisfy { $0 == 200 }, "\(ra.result.stderr)")
            #expect(rb.statuses.allSatisfy { $0 == 200 } && rc.statuses.allSatisfy { $0 == 200 })
            let stats = h.simulator.statistics()
            #expect(stats.maximumConcurrentStreams > 1)
            #expect(stats.connectionsAccepted >= 3)
            let recorded = h.simulator.deliveries()
            #expect(recorded.count == 400)
            #expect(Set(recorded.map(\.sequence)).count == 400)
            #expect(Set(recorded.map(\.connectionID)).count >= 3)
        }
    }

    @Test("more than 1000 streams on one connection: curl's stream resets do not trip nghttp2's rapid-reset guard")
    func manyStreamsOnOneConnection() async throws {
        try await withSimulator { h in
            let run = try await h.pushMany(
                tokens: (0..<1500).map { SimulatorHarness.token($0) }, parallel: true, parallelMax: 100)
            #expect(run.statuses.count == 1500)
            #expect(run.statuses.allSatisfy { $0 == 200 }, "\(run.result.stderr.prefix(300))")
            #expect(h.simulator.statistics().connectionsAccepted == 1)
        }
    }

    @Test("garbage over TCP and over TLS, HTTP/1.1, and malformed HTTP/2 frames never take the simulator down")
    func garbageDoesNotCrash() async throws {
        try await withSimulator { h in
            let dir = TestFiles.scratch()
            var random = SystemRandomNumberGenerator()
            let noise = (0..<8192).map { _ in UInt8.random(in: 0...255, using: &random) }
            let noisePath = dir + "/noise"
            _ = FileManager.default.createFile(atPath: noisePath, contents: Data(noise))
            // A valid client preface, then a SETTINGS frame with a bad length, a HEADERS frame with a
            // broken HPACK block, DATA on an idle stream, then noise.
            var frames = Array("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".utf8)
            frames += [0, 0, 0, 0x4, 0, 0, 0, 0, 0]
            frames += [0, 0, 5, 0x4, 0, 0, 0, 0, 0, 1, 2, 3, 4, 5]
            frames += [0, 0, 4, 0x1, 0x5, 0, 0, 0, 1, 0xff, 0xff, 0xff, 0xff]
            frames += [0, 0, 3, 0x0, 0x1, 0, 0, 0, 7, 1, 2, 3]
            frames += noise.prefix(2000)
            let framesPath = dir + "/frames"
            _ = FileManager.default.createFile(atPath: framesPath, contents: Data(frames))
            let port = String(h.endpoint.port)

            // Raw bytes where a TLS ClientHello should be.
            _ = try await ProcessRunner.run("bash", ["-c", "cat \(noisePath) > /dev/tcp/127.0.0.1/\(port)"])
            // Cleartext HTTP/2 against the TLS port.
            let cleartext = try await ProcessRunner.run(
                "curl", ["-sS", "--max-time", "10", "--http2-prior-knowledge", "http://127.0.0.1:\(port)/3/device/00"])
            #expect(cleartext.status != 0)
            // HTTP/1.1 over TLS (APNs speaks only h2).
            let http11 = try await ProcessRunner.run(
                "curl", ["-sS", "--max-time", "10", "--http1.1", "--cacert", h.endpoint.caFile, "\(h.endpoint.url)/3/device/00"])
            #expect(http11.status != 0)
            // Noise and malformed frames inside a TLS session that negotiated h2.
            for path in [noisePath, framesPath] {
                _ = try await ProcessRunner.run(
                    "bash",
                    ["-c", "timeout 10 openssl s_client -connect 127.0.0.1:\(port) -alpn h2 -quiet -no_ign_eof < \(path)"])
            }
            // Odd but well-formed requests.
            let longHeader = try await h.push(headers: ["x-padding": String(repeating: "a", count: 8000)])
            #expect(longHeader.status == 200)
            let duplicate = try await ProcessRunner.run(
                "curl",
                [
                    "-sS", "--http2", "--cacert", h.endpoint.caFile, "-H", "apns-topic: a.push-type.liveactivity", "-H",
                    "apns-topic: b.push-type.liveactivity", "-H", "authorization: bearer \(h.jwt)", "-d", "{}", "-w",
                    "%{http_code}",
                    "-o", "/dev/null", "\(h.endpoint.url)/3/device/\(SimulatorHarness.token())",
                ])
            #expect(duplicate.stdout == "400")
            let weirdPath = try await h.push(path: "/3/device/%00%ff/../..")
            #expect(weirdPath.status == 400)

            let after = try await h.push()
            #expect(after.status == 200, "\(after.curlError)")
        }
    }

    @Test("what the simulator reads with the one JSON type: numbers apart from booleans, whole numbers, order")
    func receivedJSON() throws {
        let delivery = SimulatedDelivery(
            sequence: 1, receivedAt: 0, path: "/3/device/00", deviceToken: "00",
            payload: #"{"aps":{"timestamp":14.0,"event":"update","relevance-score":1,"alert":true}}"#, status: 200,
            apnsID: "id")
        let aps = try #require(delivery.aps)
        #expect(aps["timestamp"]?.integerValue == 14)
        #expect(aps["relevance-score"]?.doubleValue == 1)
        #expect(aps["alert"]?.doubleValue == nil && aps["alert"]?.boolValue == true)
        #expect(aps.objectMembers?.map(\.key) == ["timestamp", "event", "relevance-score", "alert"])
        #expect(delivery.summaryLine.contains("update"))
        let duplicate = SimulatedDelivery(
            sequence: 2, receivedAt: 0, path: "/3/device/00", deviceToken: "00", payload: #"{"a":1,"a":2}"#, status: 400,
            apnsID: "id")
        #expect(duplicate.json == nil)
    }

}
