import Foundation
import TestSupport
import Testing

/// Runs the built `livevisits demo` to the end on a private cluster of its own and checks what the APNs
/// simulator recorded (the `--record` summary), not only the exit status.
@Suite(.serialized, .timeLimit(.minutes(10))) struct DemoCommandTests {
    @Test func demoPlaysBothVisitsAndAPNsReceivesWhatTheyImply() async throws {
        let livevisits = try await BuiltProduct.livevisits()
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("lv-demo-\(UUID().uuidString.prefix(8))")
        let record = folder.appendingPathComponent("record.json")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }

        let outcome = try await Subprocess.run(livevisits, ["demo", "--dir", folder.path, "--record", record.path])
        #expect(outcome.status == 0, "demo failed: \(outcome.stderr.suffix(2000))")
        #expect(outcome.stdout.components(separatedBy: "APNs ←").count - 1 == 18, "one printed line per push")
        #expect(outcome.stdout.contains("stopped the PostgreSQL cluster"), "the demo stops the cluster it started")
        #expect(outcome.stdout.contains("livevisits demo --keep-running"))

        let data = try Data(contentsOf: record)
        let summary = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        #expect(summary["passed"] as? Bool == true)
        let deliveries = try #require(summary["deliveries"] as? [[String: Any]])
        let completed = try #require(summary["completedVisit"] as? String)
        let cancelled = try #require(summary["cancelledVisit"] as? String)

        func events(_ kind: String) -> [[String: Any]] { deliveries.filter { $0["event"] as? String == kind } }
        func contentState(_ push: [String: Any]) -> [String: Any] { push["contentState"] as? [String: Any] ?? [:] }
        #expect(deliveries.allSatisfy { $0["status"] as? Int == 200 })
        let activityPushes = deliveries.filter {
            $0["device"] as? String != "notification-B" && $0["device"] as? String != "channel-B"
        }
        #expect(activityPushes.allSatisfy { $0["pushType"] as? String == "liveactivity" })
        #expect(activityPushes.allSatisfy { $0["topic"] as? String == "com.example.fieldservice.push-type.liveactivity" })
        #expect(events("start").count == 3)
        #expect(events("update").count == 9)
        #expect(events("end").count == 4)
        #expect(deliveries.count == 18)

        // Contract §7: visit B is also followed through one broadcast channel by two devices (both asked for
        // it and got the same id): its en-route update and its end, each once, byte for byte the activity's.
        let broadcasts = deliveries.filter { $0["device"] as? String == "channel-B" }
        let activityB = deliveries.filter { $0["device"] as? String == "activity-B" }
        #expect(broadcasts.map { $0["event"] as? String } == ["update", "end"])
        #expect(Set(broadcasts.compactMap { $0["channelId"] as? String }).count == 1)
        #expect(broadcasts.allSatisfy { $0["topic"] is NSNull && $0["pushType"] as? String == "liveactivity" })
        #expect(broadcasts.map { $0["timestamp"] as? Int } == activityB.map { $0["timestamp"] as? Int })
        #expect(broadcasts.map { contentState($0) as NSDictionary } == activityB.map { contentState($0) as NSDictionary })
        #expect(outcome.stdout.contains("pushType: .channel("))

        // Contract §9: customer B's iPad has Live Activities off and gets ordinary notifications.
        let notifications = events("alert")
        #expect(notifications.map { $0["device"] as? String } == ["notification-B", "notification-B"])
        #expect(notifications.map { $0["notificationStatus"] as? String } == ["scheduled", "cancelled"])
        // Visit B was booked in Simplified Chinese: its notifications speak it.
        #expect(notifications.map { $0["alertTitle"] as? String } == ["上门服务已预约", "服务已取消"])
        #expect(outcome.stdout.contains("alert=上门服务已预约"), "the demo prints the Chinese alert")
        #expect(notifications.allSatisfy { $0["pushType"] as? String == "alert" })
        #expect(notifications.allSatisfy { $0["topic"] as? String == "com.example.fieldservice" })
        #expect(notifications.allSatisfy { $0["priority"] as? Int == 10 })

        // The booking starts an activity on each of customer A's devices, with the booking's alert.
        let bookings = events("start").filter { $0["alertTitle"] as? String == "Visit booked" }
        #expect(Set(bookings.compactMap { $0["device"] as? String }) == ["push-to-start", "push-to-start-iPad"])
        #expect(bookings.count == 2)
        #expect(events("start").allSatisfy { $0["priority"] as? Int == 10 && $0["visitId"] as? String == completed })

        // Contract §13: the iPad's activity was dismissed, then its push-to-start token rotated. Nothing reaches
        // either: no update to the dismissed activity, no start to the new token.
        #expect(!deliveries.contains { $0["device"] as? String == "activity-A-iPad" })
        #expect(!deliveries.contains { $0["device"] as? String == "push-to-start-iPad-rotated" })
        #expect(outcome.stdout.contains("ledger: la-"), "the demo prints the ledger")
        #expect(outcome.stdout.contains(": dismissed (origin pushToStart)"), "the ledger shows the iPad's dismissal")
        #expect(outcome.stdout.contains(": renewed (origin pushToStart)"))
        #expect(outcome.stdout.contains(": active (origin renewal)"))

        // Renewal: the iPhone's first activity gets only the renewal's end (dismissed at once), then the iPhone's
        // push-to-start token a start with the renewal's own alert, newer than the end.
        let renewalEnds = deliveries.filter { $0["device"] as? String == "activity-A" }
        #expect(renewalEnds.map { $0["event"] as? String } == ["end"])
        let renewalEnd = try #require(renewalEnds.first)
        let renewalEndTimestamp = try #require(renewalEnd["timestamp"] as? Int)
        #expect(renewalEnd["dismissal-date"] as? Int == renewalEndTimestamp)
        #expect(contentState(renewalEnd)["status"] as? String == "scheduled")
        let renewalStarts = events("start").filter { $0["alertTitle"] as? String == "Still on its way" }
        #expect(renewalStarts.map { $0["device"] as? String } == ["push-to-start"])
        let renewalStart = try #require(renewalStarts.first)
        #expect((renewalStart["timestamp"] as? Int ?? 0) > renewalEndTimestamp)

        let updates = events("update").filter { $0["visitId"] as? String == completed }
        #expect(updates.allSatisfy { $0["device"] as? String == "activity-A-renewed" }, "the renewed activity follows the visit")
        #expect(
            updates.map { contentState($0)["status"] as? String ?? "?" }
                == ["enRoute", "enRoute", "enRoute", "enRoute", "nearby", "onSite", "finishing"])
        let distances = updates.prefix(5).map { (contentState($0)["kilometresAway"] as? NSNumber)?.doubleValue ?? -1 }
        // Contract §8: the 6.0 km update waited for the progress interval and was replaced by 3.6 km.
        #expect(distances == [14.5, 14.5, 8.2, 3.6, 0.8], "the technician comes closer; the waiting 6.0 km is coalesced away")
        // Driving in: the technician's phone posts fixes and the server works out the distance to the visit's
        // address; a fix that changes the shown distance by less than 0.1 km, or one not accurate enough, does
        // nothing; within 1 km the visit becomes nearby on its own. The coordinates never reach a push.
        #expect(outcome.stdout.contains("fix: progress 8.2 km appended to \(completed)"))
        #expect(outcome.stdout.contains("fix: nearby 0.8 km appended to \(completed)"))
        #expect(outcome.stdout.contains("fix: nothing changes (no event, no push)"))
        #expect(outcome.stdout.contains("fix: ignored (inaccurate)"))
        #expect(!String(decoding: data, as: UTF8.self).contains("51.4"), "no coordinate in any push")
        // The demo's allowance is one priority-10 push per hour: onSite's alert goes at 5.
        #expect(updates.map { $0["priority"] as? Int ?? 0 } == [5, 5, 5, 5, 10, 5, 5])
        // Running late: the dispatcher's delay moved visit A's window (start and end) 20 minutes later, and every
        // later update of the visit keeps the moved window until onSite collapses it.
        func window(_ push: [String: Any]) -> [Int] {
            [contentState(push)["arrivalStartEpoch"] as? Int ?? -1, contentState(push)["arrivalEndEpoch"] as? Int ?? -1]
        }
        try #require(updates.count >= 5, "visit A's updates up to nearby")
        let booked = window(updates[0])
        #expect(window(updates[1]) == booked.map { $0 + 20 * 60 })
        #expect(updates[2...4].allSatisfy { window($0) == window(updates[1]) })
        #expect(outcome.stdout.contains("running 20 minutes late"))
        #expect(outcome.stdout.contains("delayed: \(completed), now at version"), "the demo prints what the delay moved")

        let ends = events("end").filter { $0["device"] as? String != "channel-B" }
        let completedEnd = try #require(ends.first { $0["device"] as? String == "activity-A-renewed" })
        let cancelledEnd = try #require(ends.first { $0["visitId"] as? String == cancelled })
        let completedTimestamp = try #require(completedEnd["timestamp"] as? Int)
        let cancelledTimestamp = try #require(cancelledEnd["timestamp"] as? Int)
        #expect(completedEnd["dismissal-date"] as? Int == completedTimestamp + 3600)
        #expect(cancelledEnd["dismissal-date"] as? Int == cancelledTimestamp)
        #expect(contentState(completedEnd)["status"] as? String == "completed")
        #expect(contentState(cancelledEnd)["status"] as? String == "cancelled")

        // The iPhone's activities of visit A, the renewal's end first, then the renewed activity's pushes.
        let timestamps =
            deliveries
            .filter { $0["visitId"] as? String == completed && $0["event"] as? String != "start" }
            .compactMap { $0["timestamp"] as? Int }
        #expect(timestamps.count == 9)
        #expect(zip(timestamps, timestamps.dropFirst()).allSatisfy { $0 < $1 }, "strictly increasing aps.timestamp")
    }

    @Test func unknownFlagIsAUsageError() async throws {
        let livevisits = try await BuiltProduct.livevisits()
        let outcome = try await Subprocess.run(livevisits, ["demo", "--no-such-flag"])
        #expect(outcome.status == 2)
        #expect(outcome.stderr.contains("livevisits demo: unknown option '--no-such-flag'"), "\(outcome.stderr)")
        #expect(outcome.stderr.split(separator: "\n").count == 1)
    }
}
