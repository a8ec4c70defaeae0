import APNsSimulator
import Foundation
import JSON

/// Plays the scenario through the HTTP API: mints the technician's and customers' keys as the dispatcher,
/// then performs each step and waits until APNs has received the push it implies before the next one
/// (so no update is superseded by the next and the printout follows the story).
struct DemoPlayer: Sendable {
    /// The keys the demo used, printed by `--keep-running`.
    struct Keys: Sendable {
        var dispatcher: String
        var technician: String
        var customerA: String
        var customerB: String
    }

    var scenario: DemoScenario
    var client: DemoClient
    var simulator: APNsSimulator
    var dispatcherKey: String

    func play(pushTimeout: Double) async throws -> Keys {
        func mint(_ role: String, _ subject: String) async throws -> String {
            let answer = try await client.send(
                "POST", "/v1/keys", key: dispatcherKey, body: ["role": .string(role), "subject": .string(subject)], expect: 201)
            guard let key = answer["key"]?.stringValue else { throw CommandFailure("POST /v1/keys answered no key") }
            return key
        }
        DemoCommand.progress("dispatcher mints a technician key and two customer keys (POST /v1/keys)")
        let keys = Keys(
            dispatcher: dispatcherKey,
            technician: try await mint("technician", scenario.technicianId),
            customerA: try await mint("customer", scenario.customerA),
            customerB: try await mint("customer", scenario.customerB))
        let steps = scenario.steps(
            dispatcher: keys.dispatcher, technician: keys.technician, customerAKey: keys.customerA,
            customerBKey: keys.customerB, now: Int(Date().timeIntervalSince1970))
        var expectedCount: [DemoScenario.Device: Int] = [:]
        for (index, step) in steps.enumerated() {
            try Task.checkCancellation()
            if step.waitsForTheServer {
                DemoCommand.progress("[\(index + 1)/\(steps.count)] \(step.actor) \(step.description)")
            } else {
                DemoCommand.progress(
                    "[\(index + 1)/\(steps.count)] \(step.actor) \(step.description) — \(step.method) \(step.path)")
            }
            let answer =
                step.waitsForTheServer
                ? JSONValue.null
                : try await client.send(step.method, step.path, key: step.key, body: step.body, expect: step.expect)
            if let expected = step.ledger { try check(ledger: answer, against: expected) }
            if let expected = step.delays { try check(delayed: answer, against: expected) }
            if step.answersChannel {
                guard let id = answer["channelId"]?.stringValue else {
                    throw CommandFailure("PUT …/channel answered no channelId")
                }
                guard scenario.channels.all.isEmpty || scenario.channels.contains(id) else {
                    throw CommandFailure("a second PUT …/channel answered another channel id")
                }
                scenario.channels.insert(id)
                DemoCommand.progress("    channel \(id): the app starts its activity with pushType: .channel(\"\(id)\")")
            }
            for push in step.pushes {
                expectedCount[push.device, default: 0] += 1
                try await waitForPush(to: push.device, count: expectedCount[push.device]!, timeout: pushTimeout)
            }
        }
        return keys
    }

    /// Prints a ledger answer, one entry a line, and fails unless it holds exactly the expected activities in
    /// the expected states (a `starting` entry, say, would be a start the rules should have withheld).
    private func check(ledger answer: JSONValue, against expected: [String: String]) throws {
        let entries = answer["liveActivities"]?.arrayElements ?? []
        var found: [String: String] = [:]
        for entry in entries {
            let activity = entry["activityId"]?.stringValue ?? "(none)"
            let state = entry["state"]?.stringValue ?? "-"
            let device = entry["deviceId"]?.stringValue ?? "-"
            let origin = entry["origin"]?.stringValue ?? "-"
            DemoCommand.progress("    ledger: \(activity) on \(device): \(state) (origin \(origin))")
            found[activity] = state
        }
        guard entries.count == expected.count, found == expected else {
            let want = expected.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", ")
            throw CommandFailure("the Live Activity ledger is not what the steps imply (expected \(want))")
        }
    }

    /// Prints a delay's answer, one visit a line, and fails unless it moved exactly the expected visits.
    private func check(delayed answer: JSONValue, against expected: [String]) throws {
        let visits = answer["visits"]?.arrayElements ?? []
        for visit in visits {
            let id = visit["visitId"]?.stringValue ?? "(none)"
            let version = visit["version"]?.integerValue.map(String.init) ?? "-"
            DemoCommand.progress("    delayed: \(id), now at version \(version)")
        }
        guard visits.compactMap({ $0["visitId"]?.stringValue }) == expected else {
            throw CommandFailure("the delay did not move what the steps imply (expected \(expected.joined(separator: ", ")))")
        }
    }

    /// Polls the simulator's records until `count` pushes reached `device`.
    private func waitForPush(to device: DemoScenario.Device, count: Int, timeout: Double) async throws {
        let deadline = Date().addingTimeInterval(timeout)
        while true {
            let received = simulator.deliveries().filter { scenario.device(of: $0) == device }.count
            if received >= count { return }
            guard Date() < deadline else {
                throw CommandFailure(
                    "APNs received no push for \(device.rawValue) within \(Int(timeout)) s; see 'livevisits outbox list'")
            }
            try await Task.sleep(nanoseconds: 50_000_000)
        }
    }
}
