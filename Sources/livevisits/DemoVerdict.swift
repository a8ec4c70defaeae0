import APNsSimulator
import Foundation
import JSON

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
        var lastWindow: [DemoScenario.Device: (start: Int64, end: Int64)] = [:]
        // Compared per device, in order: two devices' pushes of one step may arrive either way round.
        var expectedByDevice: [DemoScenario.Device: [DemoScenario.ExpectedPush]] = [:]
        for push in expected { expectedByDevice[push.device, default: []].append(push) }
        var seen: [DemoScenario.Device: Int] = [:]
        for (index, (device, delivery)) in received.enumerated() {
            let label = "push \(index + 1) (\(device.rawValue))"
            let aps = delivery.aps
            let nth = seen[device, default: 0]
            seen[device] = nth + 1
            if delivery.status != 200 { problems.append("\(label): APNs answered \(delivery.status) \(delivery.reason ?? "")") }
            if let timestamp = aps?["timestamp"]?.integerValue {
                if let last = lastTimestamp[device], timestamp <= last {
                    problems.append("\(label): aps.timestamp \(timestamp) does not increase")
                }
                lastTimestamp[device] = timestamp
            }
            // A device the steps give no (more) push: a dismissed activity, a rotated token after a dismissal.
            guard let wanted = expectedByDevice[device], nth < wanted.count else {
                let event = aps?["event"]?.stringValue ?? "-"
                problems.append("\(label): an unexpected \(event) reached \(device.rawValue)")
                continue
            }
            let want = wanted[nth]
            let isAlert = delivery.header("apns-push-type") == "alert"
            let event = aps?["event"]?.stringValue ?? (isAlert ? "alert" : "-")
            let status = (isAlert ? delivery.json?["status"] : aps?["content-state"]?["status"])?.stringValue ?? "-"
            let priority = delivery.header("apns-priority") ?? "-"
            if device != want.device || event != want.event || status != want.status || priority != want.priority {
                problems.append(
                    "\(label): got \(event) \(status) p\(priority) on \(device.rawValue), expected \(want.event) \(want.status) "
                        + "p\(want.priority) on \(want.device.rawValue)")
            }
            if (aps?["alert"] != nil) != want.hasAlert {
                problems.append("\(label): alert \(want.hasAlert ? "missing" : "unexpected")")
            }
            if let title = want.alertTitle, aps?["alert"]?["title"]?.stringValue != title {
                problems.append(
                    "\(label): alert \"\(aps?["alert"]?["title"]?.stringValue ?? "none")\", expected \"\(title)\"")
            }
            if event == "start", aps?["attributes"]?["visitId"]?.stringValue != scenario.visitA {
                problems.append("\(label): the start's attributes.visitId is not \(scenario.visitA)")
            }
            let state = aps?["content-state"]
            let window = state?["arrivalStartEpoch"]?.integerValue.flatMap { start in
                state?["arrivalEndEpoch"]?.integerValue.map { (start: start, end: $0) }
            }
            if let minutes = want.windowMovedMinutes {
                let moved = window.flatMap { now in lastWindow[device].map { (now.start - $0.start, now.end - $0.end) } }
                if moved?.0 != Int64(minutes * 60) || moved?.1 != Int64(minutes * 60) {
                    problems.append("\(label): the arrival window did not move \(minutes) minutes later than the push before")
                }
            }
            if let window { lastWindow[device] = window }
            let dismissal = aps?["dismissal-date"]?.integerValue
            let timestamp = aps?["timestamp"]?.integerValue ?? 0
            switch want.dismissal {
            case .none where dismissal != nil: problems.append("\(label): unexpected dismissal-date")
            case .immediate where dismissal != timestamp:
                problems.append(
                    "\(label): dismissal-date \(dismissal.map(String.init) ?? "none"), expected \(timestamp) (immediate)")
            case .afterOneHour where dismissal != timestamp + 3600:
                problems.append("\(label): dismissal-date \(dismissal.map(String.init) ?? "none"), expected \(timestamp + 3600)")
            default: break
            }
        }
    }

    var passed: Bool { problems.isEmpty }

    /// The JSON summary `--record FILE` writes: the two visit ids and every push of this run as APNs
    /// received it (device label and token fingerprint, never the token). Keys sorted, one per line.
    func record(scenario: DemoScenario) -> Data {
        func optional(_ value: JSONValue?) -> JSONValue { value ?? .null }
        let deliveries: [JSONValue] = received.map { device, delivery in
            let aps = delivery.aps
            let whole = { (key: String) -> JSONValue in optional(aps?[key]?.integerValue.map { .number(Double($0)) }) }
            let header = { (name: String) -> JSONValue in optional(delivery.header(name).map(JSONValue.string)) }
            return [
                "alertTitle": optional(aps?["alert"]?["title"]?.stringValue.map(JSONValue.string)),
                "apnsId": .string(delivery.apnsID),
                "contentState": optional(aps?["content-state"]),
                "device": .string(device.rawValue),
                "dismissal-date": whole("dismissal-date"),
                "event": optional(
                    (aps?["event"]?.stringValue ?? (delivery.header("apns-push-type") == "alert" ? "alert" : nil)).map(
                        JSONValue.string)),
                "notificationStatus": optional(delivery.json?["status"]?.stringValue.map(JSONValue.string)),
                "priority": optional(delivery.header("apns-priority").flatMap(Int.init).map { .number(Double($0)) }),
                "pushType": header("apns-push-type"),
                "relevance-score": optional(aps?["relevance-score"]?.doubleValue.map(JSONValue.number)),
                "stale-date": whole("stale-date"),
                "status": .number(Double(delivery.status)),
                "timestamp": whole("timestamp"),
                "topic": header("apns-topic"),
                "visitId": .string(
                    device == .activityB || device == .notificationB || device == .channelB ? scenario.visitB : scenario.visitA),
                "channelId": header("apns-channel-id"),
            ]
        }
        let summary: JSONValue = [
            "cancelledVisit": .string(scenario.visitB), "completedVisit": .string(scenario.visitA),
            "deliveries": .array(deliveries), "passed": .bool(passed), "problems": .array(problems.map(JSONValue.string)),
        ]
        return Data(summary.indentedSerialized())
    }
}
