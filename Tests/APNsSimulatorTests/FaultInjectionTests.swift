import APNsSimulator
import Foundation
import Testing

@Suite("Fault injection", .timeLimit(.minutes(2)))
struct FaultInjectionTests {
    @Test("fail the next N pushes with a status and reason, then accept again")
    func failNext() async throws {
        try await withSimulator { h in
            h.simulator.failNext(2, status: 503, reason: "ServiceUnavailable")
            h.simulator.failNext(1, status: 429, reason: "TooManyRequests")
            var seen: [(Int, String?)] = []
            for _ in 0..<4 {
                let r = try await h.push()
                seen.append((r.status, r.reason))
            }
            #expect(seen.map(\.0) == [503, 503, 429, 200])
            #expect(seen.map(\.1) == ["ServiceUnavailable", "ServiceUnavailable", "TooManyRequests", nil])
            #expect(h.simulator.deliveries().map(\.status) == [503, 503, 429, 200])
        }
    }

    @Test("an unregistered token answers 410 with the timestamp in milliseconds; others are accepted")
    func unregistered() async throws {
        try await withSimulator { h in
            let dead = SimulatorHarness.token(7)
            h.simulator.markUnregistered(token: dead, timestamp: 1_790_000_123_456)
            let gone = try await h.push(token: dead)
            #expect(gone.status == 410)
            #expect(gone.reason == "Unregistered")
            #expect((gone.json?["timestamp"] as? NSNumber)?.int64Value == 1_790_000_123_456)
            #expect(try await h.push(token: SimulatorHarness.token(8)).status == 200)
            #expect(h.simulator.deliveries().first?.unregisteredTimestamp == 1_790_000_123_456)

            h.simulator.markUnregistered(token: SimulatorHarness.token(9))
            let before = Int64(Date().timeIntervalSince1970 * 1000) - 60_000
            let later = try await h.push(token: SimulatorHarness.token(9))
            let stamp = try #require((later.json?["timestamp"] as? NSNumber)?.int64Value)
            #expect(stamp >= before)
        }
    }

    @Test("a random fraction fails: all at 1, none at 0, a reproducible mix with a seed")
    func randomFraction() async throws {
        try await withSimulator { h in
            h.simulator.failRandomly(fraction: 1, status: 500, reason: "InternalServerError")
            let all = try await h.pushMany(tokens: (0..<10).map { SimulatorHarness.token($0) }, parallel: false)
            #expect(all.statuses == Array(repeating: 500, count: 10))

            h.simulator.failRandomly(fraction: 0.5, status: 500, reason: "InternalServerError", seed: 42)
            let mix = try await h.pushMany(tokens: (0..<40).map { SimulatorHarness.token($0) }, parallel: false)
            h.simulator.failRandomly(fraction: 0.5, status: 500, reason: "InternalServerError", seed: 42)
            let again = try await h.pushMany(tokens: (0..<40).map { SimulatorHarness.token($0) }, parallel: false)
            #expect(mix.statuses == again.statuses)
            #expect(mix.statuses.contains(500))
            #expect(mix.statuses.contains(200))

            h.simulator.failRandomly(fraction: 0, status: 500, reason: "InternalServerError")
            let none = try await h.pushMany(tokens: (0..<10).map { SimulatorHarness.token($0) }, parallel: false)
            #expect(none.statuses == Array(repeating: 200, count: 10))
        }
    }

    @Test("expireProviderTokens answers 403 ExpiredProviderToken to known tokens; a fresh one is accepted")
    func expireProviderTokens() async throws {
        try await withSimulator { h in
            #expect(try await h.push().status == 200)
            h.simulator.expireProviderTokens()
            let refused = try await h.push()
            #expect(refused.status == 403)
            #expect(refused.reason == "ExpiredProviderToken")
            let fresh = try await h.key.jwt(issuedAt: Int64(Date().timeIntervalSince1970))
            #expect(try await h.push(headers: ["authorization": "bearer \(fresh)"]).status == 200)
            #expect(try await h.push().status == 403)
        }
    }

    @Test("latency delays one answer without holding up the other streams of the connection")
    func latencyDoesNotBlockOtherStreams() async throws {
        try await withSimulator { h in
            h.simulator.addLatency(seconds: 1.5, count: 1)
            let run = try await h.pushMany(tokens: (0..<6).map { SimulatorHarness.token($0) }, parallel: true)
            #expect(run.statuses == Array(repeating: 200, count: 6), "\(run.result.stderr)")
            let recorded = h.simulator.deliveries()
            #expect(recorded.count == 6)
            let delayed = try #require(recorded.first { $0.sequence == recorded.map(\.sequence).min() })
            let others = recorded.filter { $0.sequence != delayed.sequence }
            // The first arrival waited; everything that came after it was answered before it.
            #expect(others.allSatisfy { ($0.answeredAt ?? 0) < (delayed.answeredAt ?? 0) })
            #expect(Set(recorded.map(\.connectionID)).count == 1)
        }
    }

    @Test("drop (hard close) after K requests: the next request fails, the one after succeeds on a new connection")
    func dropConnectionClose() async throws {
        try await withSimulator { h in
            h.simulator.dropConnection(afterRequests: 1, mode: .close)
            let run = try await h.pushMany(tokens: (1...3).map { SimulatorHarness.token($0) }, parallel: false)
            #expect(run.statuses == [200, 0, 200], "\(run.result.stderr)")
            let recorded = h.simulator.deliveries()
            #expect(recorded.map(\.status) == [200, 0, 200])
            #expect(recorded[1].reason == "ConnectionDropped")
            #expect(!recorded[1].answered)
            #expect(recorded[0].connectionID == recorded[1].connectionID)
            #expect(recorded[2].connectionID != recorded[1].connectionID)
        }
    }

    @Test("drop with GOAWAY: earlier answers arrive, the dropped stream fails, the next connection works")
    func dropConnectionGoaway() async throws {
        try await withSimulator { h in
            h.simulator.dropConnection(afterRequests: 2, mode: .goaway)
            let run = try await h.pushMany(tokens: (1...4).map { SimulatorHarness.token($0) }, parallel: false)
            // curl reports the stream the GOAWAY left unanswered as error 16 (HTTP/2 framing layer).
            #expect(run.statuses == [200, 200, 0, 200], "\(run.statuses) \(run.result.stderr)")
            let recorded = h.simulator.deliveries()
            #expect(recorded.map(\.status) == [200, 200, 0, 200])
            #expect(recorded[2].reason == "ConnectionDropped")
            #expect(
                recorded.map(\.connectionID) == [
                    recorded[0].connectionID, recorded[0].connectionID, recorded[0].connectionID, recorded[3].connectionID,
                ])
            #expect(recorded[3].connectionID != recorded[0].connectionID)
        }
    }

    /// Three pushes sent together on one connection (curl multiplexes parallel transfers on the connection it
    /// opens rather than opening more): the first two are held by the latency, the third triggers the drop,
    /// so all three fail and are recorded unanswered on that connection. curl itself may try a transfer that
    /// died on a reused (multiplexed) connection once more on a fresh one, before anything was answered: such a
    /// retry is the client's, is recorded on another connection, and is the only way a transfer ends 200.
    @Test("a drop while other streams are in flight fails them all; every complete request is recorded unanswered")
    func dropMidFlight() async throws {
        try await withSimulator { h in
            h.simulator.addLatency(seconds: 1)
            h.simulator.dropConnection(afterRequests: 2, mode: .close)
            let run = try await h.pushMany(tokens: (1...3).map { SimulatorHarness.token($0) }, parallel: true)
            let recorded = h.simulator.deliveries()
            let first = try #require(recorded.first)
            let dropped = recorded.filter { $0.connectionID == first.connectionID }
            let retried = recorded.filter { $0.connectionID != first.connectionID }
            #expect(dropped.count == 3)
            #expect(dropped.allSatisfy { $0.status == 0 && !$0.answered && $0.reason == "ConnectionDropped" })
            #expect(retried.count < 3, "the first transfer opened the connection: curl does not retry it")
            #expect(retried.allSatisfy { $0.status == 200 && $0.answered })
            #expect(run.statuses.count == 3)
            #expect(
                run.statuses.filter { $0 == 200 }.count == retried.count
                    && run.statuses.filter { $0 == 0 }.count == 3 - retried.count,
                "\(run.statuses) \(run.result.stderr)")
            h.simulator.clearFaults()
            let after = try await h.push()
            #expect(after.status == 200)
            #expect(h.simulator.deliveries().last?.connectionID != first.connectionID)
        }
    }

    @Test("clearFaults and reset remove faults; reset also forgets deliveries")
    func clearAndReset() async throws {
        try await withSimulator { h in
            h.simulator.failNext(5, status: 503, reason: "ServiceUnavailable")
            h.simulator.clearFaults()
            let cleared = try await h.push()
            #expect(cleared.status == 200)
            h.simulator.failNext(5, status: 503, reason: "ServiceUnavailable")
            h.simulator.reset()
            #expect(h.simulator.deliveries().isEmpty)
            let afterReset = try await h.push()
            #expect(afterReset.status == 200)
            #expect(h.simulator.deliveries().count == 1)
        }
    }
}
