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
        /// The tracking link the first customer made for their visit (a path on the server), for the
        /// customer without the app.
        var trackingLink: String? = nil
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
        var keys = Keys(
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
            if step.pauseSeconds > 0 { try await Task.sleep(nanoseconds: UInt64(step.pauseSeconds * 1_000_000_000)) }
            let answer: JSONValue
            if step.waitsForTheServer {
                answer = .null
            } else if let fix = step.fix {
                answer = try await send(fix, step)
            } else {
                answer = try await client.send(step.method, step.path, key: step.key, body: step.body, expect: step.expect)
            }
            if keys.trackingLink == nil, step.method == "POST", step.path == "/v1/visits",
                step.body?["visitId"]?.stringValue == scenario.visitA
            {
                keys.trackingLink = try await makeTrackingLink(customerKey: keys.customerA)
            }
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

    /// The first visit's tracking link, made by its customer (whose family member has no iPhone), printed
    /// with the server's address: the page follows the visit live.
    private func makeTrackingLink(customerKey: String) async throws -> String {
        let path = "/v1/visits/\(scenario.visitA)/tracking-link"
        let answer = try await client.send("POST", path, key: customerKey, expect: 201)
        guard let url = answer["url"]?.stringValue else { throw CommandFailure("POST \(path) answered no url") }
        DemoCommand.progress("    customer makes a tracking link for visit \(scenario.visitA) — POST \(path)")
        DemoCommand.progress("    open it in any browser: \(client.baseURL)\(url)")
        return url
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

    /// Posts a location fix measured now, prints what it did and fails unless that is what the step says. A fix
    /// that should have moved visit A but changed nothing may have come before the server learnt that the visit
    /// is under way (it follows the event log): like a phone's next fix a moment later, it is sent again, a few
    /// times at most.
    private func send(_ fix: DemoScenario.Fix, _ step: DemoScenario.Step) async throws -> JSONValue {
        var attempt = 0
        while true {
            attempt += 1
            let body: JSONValue = [
                "latitude": .number(fix.latitude), "longitude": .number(fix.longitude),
                "accuracyMetres": .number(fix.accuracyMetres),
                "recordedAt": .number((Date().timeIntervalSince1970 * 1000).rounded() / 1000),
            ]
            let answer = try await client.send(step.method, step.path, key: step.key, body: body, expect: step.expect)
            let accepted = answer["accepted"]?.boolValue == true
            let events = answer["events"]?.arrayElements ?? []
            for event in events {
                let visit = event["visitId"]?.stringValue ?? "-"
                let type = event["type"]?.stringValue ?? "-"
                let kilometres = event["kilometresAway"]?.doubleValue.map { "\($0)" } ?? "-"
                let version = event["version"]?.integerValue.map(String.init) ?? "-"
                DemoCommand.progress("    fix: \(type) \(kilometres) km appended to \(visit), now at version \(version)")
            }
            if events.isEmpty {
                let ignored = answer["ignored"]?.stringValue
                DemoCommand.progress(
                    accepted ? "    fix: nothing changes (no event, no push)" : "    fix: ignored (\(ignored ?? "-"))")
            }
            switch fix.outcome {
            case .appends(let type, let kilometres):
                if accepted, events.isEmpty, attempt < 10 {
                    try await Task.sleep(nanoseconds: 500_000_000)
                    continue
                }
                guard accepted, events.count == 1, let event = events.first,
                    event["visitId"]?.stringValue == scenario.visitA, event["type"]?.stringValue == type,
                    event["kilometresAway"]?.doubleValue == kilometres
                else {
                    throw CommandFailure("the fix did not append \(type) at \(kilometres) km to \(scenario.visitA)")
                }
            case .nothing:
                guard accepted, events.isEmpty else { throw CommandFailure("a fix that changes nothing appended something") }
            case .ignored(let reason):
                guard !accepted, events.isEmpty, answer["ignored"]?.stringValue == reason else {
                    throw CommandFailure("a fix the server should ignore (\(reason)) was not ignored")
                }
            }
            return answer
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
