import APNsSimulator
import Foundation
import JSON
import Synchronization

/// The two visits the demo plays through the HTTP API, step by step, and the pushes each step must make
/// APNs receive. Visit A is followed from booking to completion by a customer whose iPhone registered a
/// push-to-start token; visit B's customer started the Live Activity in the app and registers its update
/// token; B is cancelled. The demo's rules (`DemoCommand.demoRules`) show contract §8 and §9 at work: A's
/// distance updates are coalesced, A's second alert is over its priority-10 allowance of 1 and goes at 5,
/// and customer B's iPad, with Live Activities off, gets ordinary notifications instead. Visit B is also
/// followed through a broadcast channel (contract §7) by two more devices of the household (a second iPhone
/// and the kitchen iPad): both ask for the visit's channel, get the same id, and B's en-route update and
/// its end each reach them as one broadcast.
struct DemoScenario: Sendable {
    /// Which simulated device a push went to.
    enum Device: String, Sendable {
        case pushToStart = "push-to-start"
        case activityA = "activity-A"
        case activityB = "activity-B"
        /// Customer B's iPad: Live Activities off, an ordinary notification token.
        case notificationB = "notification-B"
        /// Visit B's broadcast channel, followed by two devices of the household.
        case channelB = "channel-B"
    }

    /// The channel ids this run's `PUT …/channel` steps answered (filled while the demo plays).
    final class Channels: Sendable {
        private let ids = Mutex<Set<String>>([])
        func insert(_ id: String) { _ = ids.withLock { $0.insert(id) } }
        func contains(_ id: String) -> Bool { ids.withLock { $0.contains(id) } }
        var all: Set<String> { ids.withLock { $0 } }
    }

    /// The end's dismissal the contract implies.
    enum Dismissal: Sendable, Equatable {
        case none
        case immediate
        case afterOneHour
    }

    /// One push APNs must receive.
    struct ExpectedPush: Sendable {
        var device: Device
        var event: String
        var status: String
        var priority: String
        var hasAlert: Bool
        var dismissal: Dismissal = .none
    }

    /// One thing a person does, and the push it must cause (nil: none).
    struct Step: Sendable {
        var actor: String
        var description: String
        var method: String
        var path: String
        var key: String
        var body: JSONValue?
        var expect: Int
        var push: ExpectedPush?
        /// A second push the step causes on another device (a fallback notification).
        var alsoPush: ExpectedPush? = nil
        /// A broadcast the step causes on the visit's channel.
        var broadcast: ExpectedPush? = nil
        /// The step asks for a visit's channel: its answer's `channelId` is this run's (and must equal the
        /// ones before it).
        var answersChannel = false

        /// The pushes the step must cause.
        var pushes: [ExpectedPush] { [push, alsoPush, broadcast].compactMap { $0 } }
    }

    let run: String
    let visitA: String
    let visitB: String
    let customerA: String
    let customerB: String
    let technicianId = "t-42"
    let deviceId = "iphone-1"
    let tabletId = "ipad-b"
    let tokens: [Device: String]
    let channels = Channels()

    init() {
        let run = String(UUID().uuidString.replacingOccurrences(of: "-", with: "").prefix(8)).lowercased()
        self.run = run
        visitA = "demo-\(run)-a"
        visitB = "demo-\(run)-b"
        customerA = "c-\(run)-a"
        customerB = "c-\(run)-b"
        func token() -> String {
            (0..<32).map { _ in String(format: "%02x", UInt8.random(in: 0...255)) }.joined()
        }
        tokens = [.pushToStart: token(), .activityA: token(), .activityB: token(), .notificationB: token()]
    }

    /// The device a recorded push went to, when it is one of this run's.
    func device(of delivery: SimulatedDelivery) -> Device? {
        if delivery.path.hasPrefix("/4/broadcasts/"), let channel = delivery.header("apns-channel-id"),
            channels.contains(channel)
        {
            return .channelB
        }
        guard let token = delivery.deviceToken else { return nil }
        return tokens.first { $0.value == token }?.key
    }

    /// Every step, in order, for the given keys.
    func steps(dispatcher: String, technician: String, customerAKey: String, customerBKey: String, now: Int) -> [Step] {
        let window: JSONValue = ["start": .number(Double(now + 900)), "end": .number(Double(now + 2700))]
        let technicianObject: JSONValue = [
            "id": .string(technicianId), "name": "Sam", "avatarSymbol": "person.crop.circle",
            "vanDescription": "White van, blue stripe",
        ]
        func schedule(_ visit: String, customer: String, summary: String) -> JSONValue {
            [
                "visitId": .string(visit), "customerId": .string(customer),
                "attributes": ["customerFirstName": "Alex", "serviceAddress": "12 Elm Row", "jobSummary": .string(summary)],
                "technician": technicianObject, "arrivalWindow": window, "kilometresAway": 14.5,
            ]
        }
        func event(_ type: String, _ extra: JSONValue = [:]) -> JSONValue {
            .object([JSONMember("type", .string(type))] + (extra.objectMembers ?? []))
        }
        func update(_ status: String, alert: Bool = false, priority: String? = nil) -> ExpectedPush {
            ExpectedPush(
                device: .activityA, event: "update", status: status, priority: priority ?? (alert ? "10" : "5"),
                hasAlert: alert)
        }
        func notification(_ status: String) -> ExpectedPush {
            ExpectedPush(device: .notificationB, event: "alert", status: status, priority: "10", hasAlert: true)
        }
        let eventsA = "/v1/visits/\(visitA)/events"
        return [
            Step(
                actor: "customer A", description: "the iPhone registers its push-to-start token", method: "PUT",
                path: "/v1/customers/\(customerA)/push-to-start-tokens/\(deviceId)", key: customerAKey,
                body: ["pushToken": .string(tokens[.pushToStart]!), "environment": "sandbox"], expect: 204, push: nil),
            Step(
                actor: "dispatcher", description: "books visit \(visitA), arrival window opens in 15 min", method: "POST",
                path: "/v1/visits", key: dispatcher, body: schedule(visitA, customer: customerA, summary: "Boiler check"),
                expect: 201,
                push: ExpectedPush(device: .pushToStart, event: "start", status: "scheduled", priority: "10", hasAlert: true)),
            Step(
                actor: "customer A", description: "the started Live Activity registers its update token (version 1)",
                method: "PUT", path: "/v1/visits/\(visitA)/live-activities/la-\(run)-a", key: customerAKey,
                body: [
                    "pushToken": .string(tokens[.activityA]!), "environment": "sandbox", "version": 1,
                    "deviceId": .string(deviceId),
                ],
                expect: 204, push: nil),
            Step(
                actor: "technician", description: "is en route, 14.5 km away", method: "POST", path: eventsA, key: technician,
                body: event("enRoute", ["kilometresAway": 14.5]), expect: 201, push: update("enRoute")),
            Step(
                actor: "technician", description: "progress: 8.2 km away", method: "POST", path: eventsA, key: technician,
                body: event("progress", ["kilometresAway": 8.2]), expect: 201, push: update("enRoute")),
            Step(
                actor: "technician", description: "progress: 6.0 km away (waits: one progress update per 5 s)", method: "POST",
                path: eventsA, key: technician, body: event("progress", ["kilometresAway": 6.0]), expect: 201, push: nil),
            Step(
                actor: "technician", description: "progress: 3.6 km away (replaces 6.0, goes when the 5 s are over)",
                method: "POST", path: eventsA, key: technician, body: event("progress", ["kilometresAway": 3.6]), expect: 201,
                push: update("enRoute")),
            Step(
                actor: "technician", description: "is nearby, 1.2 km away", method: "POST", path: eventsA, key: technician,
                body: event("nearby", ["kilometresAway": 1.2]), expect: 201, push: update("nearby", alert: true)),
            Step(
                actor: "technician", description: "is on site (over the priority-10 allowance of 1: goes at priority 5)",
                method: "POST", path: eventsA, key: technician, body: event("onSite"), expect: 201,
                push: update("onSite", alert: true, priority: "5")),
            Step(
                actor: "technician", description: "is finishing", method: "POST", path: eventsA, key: technician,
                body: event("finishing"), expect: 201, push: update("finishing")),
            Step(
                actor: "technician", description: "completed the visit", method: "POST", path: eventsA, key: technician,
                body: event("completed"), expect: 201,
                push: ExpectedPush(
                    device: .activityA, event: "end", status: "completed", priority: "10", hasAlert: false,
                    dismissal: .afterOneHour)),
            Step(
                actor: "customer B", description: "the iPad registers its notification token", method: "PUT",
                path: "/v1/customers/\(customerB)/devices/\(tabletId)/notification-token", key: customerBKey,
                body: ["pushToken": .string(tokens[.notificationB]!), "environment": "sandbox"], expect: 204, push: nil),
            Step(
                actor: "customer B", description: "the iPad has Live Activities switched off", method: "PUT",
                path: "/v1/customers/\(customerB)/devices/\(tabletId)/preferences", key: customerBKey,
                body: ["liveActivitiesEnabled": false, "frequentPushesEnabled": false], expect: 204, push: nil),
            Step(
                actor: "dispatcher", description: "books visit \(visitB) for another customer (the iPad gets a notification)",
                method: "POST", path: "/v1/visits", key: dispatcher,
                body: schedule(visitB, customer: customerB, summary: "Radiator leak"), expect: 201,
                push: notification("scheduled")),
            Step(
                actor: "customer B", description: "the Live Activity started in the app registers its token (version 1)",
                method: "PUT", path: "/v1/visits/\(visitB)/live-activities/la-\(run)-b", key: customerBKey,
                body: ["pushToken": .string(tokens[.activityB]!), "environment": "sandbox", "version": 1], expect: 204, push: nil),
            Step(
                actor: "customer B", description: "a second iPhone asks for visit \(visitB)'s broadcast channel (iOS 18)",
                method: "PUT", path: "/v1/visits/\(visitB)/channel", key: customerBKey, body: ["environment": "sandbox"],
                expect: 200, push: nil, answersChannel: true),
            Step(
                actor: "customer B", description: "the kitchen iPad asks too: the same channel, no second create",
                method: "PUT", path: "/v1/visits/\(visitB)/channel", key: customerBKey, body: ["environment": "sandbox"],
                expect: 200, push: nil, answersChannel: true),
            Step(
                actor: "technician", description: "is en route to visit \(visitB) (one broadcast reaches both devices)",
                method: "POST", path: "/v1/visits/\(visitB)/events", key: technician, body: event("enRoute"), expect: 201,
                push: ExpectedPush(device: .activityB, event: "update", status: "enRoute", priority: "5", hasAlert: false),
                broadcast: ExpectedPush(device: .channelB, event: "update", status: "enRoute", priority: "5", hasAlert: false)),
            Step(
                actor: "dispatcher", description: "cancels visit \(visitB)", method: "POST",
                path: "/v1/visits/\(visitB)/events", key: dispatcher,
                body: event("cancelled", ["reason": "Customer rescheduled"]), expect: 201,
                push: ExpectedPush(
                    device: .activityB, event: "end", status: "cancelled", priority: "10", hasAlert: false,
                    dismissal: .immediate),
                alsoPush: notification("cancelled"),
                broadcast: ExpectedPush(
                    device: .channelB, event: "end", status: "cancelled", priority: "10", hasAlert: false,
                    dismissal: .immediate)),
        ]
    }
}
