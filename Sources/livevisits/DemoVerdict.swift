import APNsSimulator
import Foundation

/// Compares what the simulator recorded for this run's devices with the pushes the visits imply, and
/// writes the `--record` summary. The demo exits non-zero when `problems` is not empty.
struct DemoVerdict {
    var problems: [String] = []
    var received: [(DemoScenario.Device, SimulatedDelivery)] = []

    init(scenario: DemoScenario, expected: [DemoScenario.ExpectedPush], deliveries: [SimulatedDelivery]) {
        received = deliveries.compactMap { delivery in scenario.device(of: delivery).map { ($0, delivery) } }
        if received.count != expected.count {
            problems.append("APNs received \(received.count) pushes for this run, the visits imply \(expected.count)")
        }
        var lastTimestamp: [DemoScenario.Device: Int64] = [:]
        for (index, (device, delivery)) in received.enumerated() {
            let label = "push \(index + 1) (\(device.rawValue))"
            let aps = delivery.aps
            if delivery.status != 200 { problems.append("\(label): APNs answered \(delivery.status) \(delivery.reason ?? "")") }
            if let timestamp = aps?["timestamp"]?.integerValue {
                if let last = lastTimestamp[device], timestamp <= last {
                    problems.append("\(label): aps.timestamp \(timestamp) does not increase")
                }
                lastTimestamp[device] = timestamp
            }
            guard index < expected.count else { continue }
            let want = expected[index]
            let event = aps?["event"]?.stringValue ?? "-"
            let status = aps?["content-state"]?["status"]?.stringValue ?? "-"
            let priority = delivery.header("apns-priority") ?? "-"
            if device != want.device || event != want.event || status != want.status || priority != want.priority {
                problems.append(
                    "\(label): got \(event) \(status) p\(priority) on \(device.rawValue), expected \(want.event) \(want.status) "
                        + "p\(want.priority) on \(want.device.rawValue)")
            }
            if (aps?["alert"] != nil) != want.hasAlert {
                problems.append("\(label): alert \(want.hasAlert ? "missing" : "unexpected")")
            }
            if event == "start", aps?["attributes"]?["visitId"]?.stringValue != scenario.visitA {
                problems.append("\(label): the start's attributes.visitId is not \(scenario.visitA)")
            }
            let dismissal = aps?["dismissal-date"]?.integerValue
            let timestamp = aps?["timestamp"]?.integerValue ?? 0
            switch want.dismissal {
            case .none where dismissal != nil: problems.append("\(label): unexpected dismissal-date")
            case .immediate where dismissal != timestamp:
                problems.append("\(label): dismissal-date \(dismissal.map(String.init) ?? "none"), expected \(timestamp) (immediate)")
            case .afterOneHour where dismissal != timestamp + 3600:
                problems.append("\(label): dismissal-date \(dismissal.map(String.init) ?? "none"), expected \(timestamp + 3600)")
            default: break
            }
        }
    }

    var passed: Bool { problems.isEmpty }

    /// The JSON summary `--record FILE` writes: the two visit ids and every push of this run as APNs
    /// received it (device label and token fingerprint, never the token).
    func record(scenario: DemoScenario) throws -> Data {
        let deliveries: [[String: Any]] = received.map { device, delivery in
            let aps = delivery.aps
            var entry: [String: Any] = [
                "device": device.rawValue,
                "visitId": device == .activityB ? scenario.visitB : scenario.visitA,
                "status": delivery.status,
                "event": aps?["event"]?.stringValue ?? NSNull(),
                "priority": Int(delivery.header("apns-priority") ?? "") ?? NSNull(),
                "pushType": delivery.header("apns-push-type") ?? NSNull(),
                "topic": delivery.header("apns-topic") ?? NSNull(),
                "apnsId": delivery.apnsID,
                "contentState": aps?["content-state"].map { Self.foundation($0) } ?? NSNull(),
                "alertTitle": aps?["alert"]?["title"]?.stringValue ?? NSNull(),
            ]
            for key in ["timestamp", "stale-date", "dismissal-date"] {
                entry[key] = aps?[key]?.integerValue.map { Int($0) } ?? NSNull()
            }
            entry["relevance-score"] = aps?["relevance-score"]?.doubleValue ?? NSNull()
            return entry
        }
        let summary: [String: Any] = [
            "completedVisit": scenario.visitA, "cancelledVisit": scenario.visitB,
            "passed": passed, "problems": problems, "deliveries": deliveries,
        ]
        return try JSONSerialization.data(withJSONObject: summary, options: [.prettyPrinted, .sortedKeys])
    }

    /// A recorded JSON value as Foundation objects (numbers as Double or Int).
    private static func foundation(_ value: ReceivedJSON) -> Any {
        switch value {
        case .object(let members):
            var object: [String: Any] = [:]
            for (key, member) in members { object[key] = foundation(member) }
            return object
        case .array(let items): return items.map { foundation($0) }
        case .string(let s): return s
        case .number(let n):
            if let integer = Int(n) { return integer }
            return Double(n) ?? 0
        case .bool(let b): return b
        case .null: return NSNull()
        }
    }
}
