import APNsSimulator
import Foundation
import JSON
import Runtime

/// The two visits the demo plays through the HTTP API, step by step, and the pushes each step must make
/// APNs receive. Visit A is followed from booking to completion by a customer whose iPhone and iPad
/// registered push-to-start tokens: the booking starts an activity on each. The customer swipes the iPad's
/// away (the app reports `dismissed`), and the iPad's push-to-start token then rotates: no start reaches it
/// (a dismissal is kept, contract §13). Before the technician sets off, the iPhone's activity reaches the
/// demo's short `activityRenewalSeconds` and the server renews it: an end to it, then a start with the
/// renewal's own alert to the iPhone only; the renewed activity registers and follows the rest of the
/// visit, and the ledger (`GET …/live-activities`) shows the three activities. Visit B's customer started
/// the Live Activity in the app and registers its update token; B is cancelled. The demo's rules
/// (`DemoCommand.demoRules`) show contract §8 and §9 at work: A's distance updates are coalesced, A's second
/// alert is over its priority-10 allowance of 1 and goes at 5, and customer B's iPad, with Live Activities
/// off, gets ordinary notifications instead. Visit B is also followed through a broadcast channel (contract
/// §7) by two more devices of the household (a second iPhone and the kitchen iPad): both ask for the visit's
/// channel, get the same id, and B's en-route update and its end each reach them as one broadcast.
struct DemoScenario: Sendable {
    /// Which simulated device a push went to.
    enum Device: String, Sendable, CaseIterable {
        case pushToStart = "push-to-start"
        /// Customer A's iPad: its push-to-start token, then the token it rotates to (which must get nothing).
        case pushToStartTablet = "push-to-start-iPad"
        case pushToStartTabletRotated = "push-to-start-iPad-rotated"
        /// The iPhone's first activity of visit A (renewed), and the one the renewal's start began.
        case activityA = "activity-A"
        case activityARenewed = "activity-A-renewed"
        /// The iPad's activity of visit A, dismissed by the customer: nothing may reach it after the booking.
        case activityTablet = "activity-A-iPad"
        case activityB = "activity-B"
        /// Customer B's iPad: Live Activities off, an ordinary notification token.
        case notificationB = "notification-B"
        /// Visit B's broadcast channel, followed by two devices of the household.
        case channelB = "channel-B"
    }

    /// The channel ids this run's `PUT …/channel` steps answered (filled while the demo plays).
    final class Channels: Sendable {
        private let ids = Lock<Set<String>>([])
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
        /// The alert's title, when the step cares which alert it is (a booking's or a renewal's start).
        var alertTitle: String? = nil
        /// How many minutes later than the device's previous push this one's arrival window (start and end)
        /// must be, when the step moves it (a technician running late).
        var windowMovedMinutes: Int? = nil
        /// The distance the push must show, when the step decides it (a location fix).
        var kilometresAway: Double? = nil
    }

    /// What a location fix must do, as its answer tells.
    enum FixOutcome: Sendable, Equatable {
        /// Appends one event of this type to visit A, showing this distance.
        case appends(type: String, kilometresAway: Double)
        /// Accepted, and changes nothing (the shown distance is the visit's already).
        case nothing
        /// Not accepted, for this reason (`inaccurate`, `stale`).
        case ignored(String)
    }

    /// A location fix the technician's phone posts: where, how sure, and what it must do. The player sends it
    /// with the time it is sent as `recordedAt`.
    struct Fix: Sendable {
        var latitude: Double
        var longitude: Double
        var accuracyMetres: Double
        var outcome: FixOutcome
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
        /// The step sends nothing: it waits for what the server does by itself (a renewal).
        var waitsForTheServer = false
        /// The step reads a visit's ledger: the states it must show, by activity id (and nothing else).
        var ledger: [String: String]? = nil
        /// The step posts a technician's delay: its answer lists the visits moved, which must be these.
        var delays: [String]? = nil
        /// The step posts a location fix (its body is made when it is sent).
        var fix: Fix? = nil
        /// How long the step waits before it is sent (a phone posts a fix every few seconds).
        var pauseSeconds: Double = 0

        /// The pushes the step must cause.
        var pushes: [ExpectedPush] { [push, alsoPush, broadcast].compactMap { $0 } }

        /// A step that only waits for the server.
        static func waiting(_ actor: String, _ description: String, push: ExpectedPush, alsoPush: ExpectedPush) -> Step {
            Step(
                actor: actor, description: description, method: "", path: "", key: "", body: nil, expect: 0, push: push,
                alsoPush: alsoPush, waitsForTheServer: true)
        }
    }

    let run: String
    let visitA: String
    let visitB: String
    let customerA: String
    let customerB: String
    let technicianId = "t-42"
    /// How late the technician runs on the way to visit A.
    let delayMinutes = 20
    /// Visit A's service location (booked with the visit); the technician drives in from the south.
    static let serviceLocation = (latitude: 51.5074, longitude: -0.1278)
    /// Kilometres per degree of latitude on the sphere the server measures on (its mean Earth radius).
    static let kilometresPerDegree = 6371.0088 * Double.pi / 180
    /// The pause before a fix that comes "a few seconds" after the one before.
    static let fixIntervalSeconds = 2.0
    let deviceId = "iphone-1"
    /// Customer A's iPad.
    let tabletA = "ipad-a"
    let tabletId = "ipad-b"
    /// The activity ids of visit A: the iPhone's, its renewal's, the iPad's.
    var activityA: String { "la-\(run)-a" }
    var activityARenewed: String { "la-\(run)-a2" }
    var activityTablet: String { "la-\(run)-a-ipad" }
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
        tokens = Dictionary(uniqueKeysWithValues: Device.allCases.filter { $0 != .channelB }.map { ($0, token()) })
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
        func schedule(
            _ visit: String, customer: String, summary: String, location: JSONValue? = nil, locale: String? = nil
        ) -> JSONValue {
            var body: JSONValue = [
                "visitId": .string(visit), "customerId": .string(customer),
                "attributes": ["customerFirstName": "Alex", "serviceAddress": "12 Elm Row", "jobSummary": .string(summary)],
                "technician": technicianObject, "arrivalWindow": window, "kilometresAway": 14.5,
            ]
            if let location { body = .object((body.objectMembers ?? []) + [JSONMember("location", location)]) }
            if let locale { body = .object((body.objectMembers ?? []) + [JSONMember("locale", .string(locale))]) }
            return body
        }
        /// A fix the technician's phone posts `kilometres` due south of visit A's address.
        func fix(
            _ description: String, kilometres: Double, _ outcome: FixOutcome, push: ExpectedPush?, pause: Bool = false,
            accuracyMetres: Double = 15
        ) -> Step {
            Step(
                actor: "technician's phone", description: "location fix \(description)", method: "POST",
                path: "/v1/technicians/\(technicianId)/location", key: technician, body: nil, expect: 202, push: push,
                fix: Fix(
                    latitude: DemoScenario.serviceLocation.latitude - kilometres / DemoScenario.kilometresPerDegree,
                    longitude: DemoScenario.serviceLocation.longitude, accuracyMetres: accuracyMetres, outcome: outcome),
                pauseSeconds: pause ? DemoScenario.fixIntervalSeconds : 0)
        }
        func event(_ type: String, _ extra: JSONValue = [:]) -> JSONValue {
            .object([JSONMember("type", .string(type))] + (extra.objectMembers ?? []))
        }
        func update(
            _ status: String, alert: Bool = false, priority: String? = nil, windowMovedMinutes: Int? = nil,
            kilometresAway: Double? = nil
        ) -> ExpectedPush {
            ExpectedPush(
                device: .activityARenewed, event: "update", status: status, priority: priority ?? (alert ? "10" : "5"),
                hasAlert: alert, windowMovedMinutes: windowMovedMinutes, kilometresAway: kilometresAway)
        }
        func notification(_ status: String) -> ExpectedPush {
            ExpectedPush(device: .notificationB, event: "alert", status: status, priority: "10", hasAlert: true)
        }
        func start(_ device: Device, alert: String) -> ExpectedPush {
            ExpectedPush(device: device, event: "start", status: "scheduled", priority: "10", hasAlert: true, alertTitle: alert)
        }
        func register(_ activity: String, _ token: Device, from device: String, _ description: String) -> Step {
            Step(
                actor: "customer A", description: description, method: "PUT",
                path: "/v1/visits/\(visitA)/live-activities/\(activity)", key: customerAKey,
                body: [
                    "pushToken": .string(tokens[token]!), "environment": "sandbox", "version": 1, "deviceId": .string(device),
                ],
                expect: 204, push: nil)
        }
        let eventsA = "/v1/visits/\(visitA)/events"
        return [
            Step(
                actor: "customer A", description: "the iPhone registers its push-to-start token", method: "PUT",
                path: "/v1/customers/\(customerA)/push-to-start-tokens/\(deviceId)", key: customerAKey,
                body: ["pushToken": .string(tokens[.pushToStart]!), "environment": "sandbox"], expect: 204, push: nil),
            Step(
                actor: "customer A", description: "the iPad registers its push-to-start token", method: "PUT",
                path: "/v1/customers/\(customerA)/push-to-start-tokens/\(tabletA)", key: customerAKey,
                body: ["pushToken": .string(tokens[.pushToStartTablet]!), "environment": "sandbox"], expect: 204, push: nil),
            Step(
                actor: "dispatcher",
                description: "books visit \(visitA), arrival window opens in 15 min (a start on each device)",
                method: "POST", path: "/v1/visits", key: dispatcher,
                body: schedule(
                    visitA, customer: customerA, summary: "Boiler check",
                    location: [
                        "latitude": .number(DemoScenario.serviceLocation.latitude),
                        "longitude": .number(DemoScenario.serviceLocation.longitude),
                    ]),
                expect: 201,
                push: start(.pushToStart, alert: "Visit booked"), alsoPush: start(.pushToStartTablet, alert: "Visit booked")),
            register(
                activityA, .activityA, from: deviceId, "the iPhone's started Live Activity registers its update token (version 1)"
            ),
            register(
                activityTablet, .activityTablet, from: tabletA,
                "the iPad's started Live Activity registers its update token (version 1)"),
            Step(
                actor: "customer A", description: "swipes the iPad's Live Activity away: the app reports it dismissed",
                method: "PUT", path: "/v1/visits/\(visitA)/live-activities/\(activityTablet)/state", key: customerAKey,
                body: ["state": "dismissed"], expect: 204, push: nil),
            Step(
                actor: "customer A", description: "the iPad's push-to-start token rotates (no start: the dismissal is kept)",
                method: "PUT", path: "/v1/customers/\(customerA)/push-to-start-tokens/\(tabletA)", key: customerAKey,
                body: ["pushToken": .string(tokens[.pushToStartTabletRotated]!), "environment": "sandbox"], expect: 204,
                push: nil),
            .waiting(
                "the server",
                "renews the iPhone's activity at activityRenewalSeconds (\(DemoCommand.renewalSeconds) s): an end, then a start with "
                    + "the renewal's alert, to the iPhone only",
                push: ExpectedPush(
                    device: .activityA, event: "end", status: "scheduled", priority: "10", hasAlert: false, dismissal: .immediate),
                alsoPush: start(.pushToStart, alert: "Still on its way")),
            register(
                activityARenewed, .activityARenewed, from: deviceId,
                "the activity the renewal started registers its update token (version 1)"),
            Step(
                actor: "dispatcher", description: "reads visit \(visitA)'s Live Activity ledger", method: "GET",
                path: "/v1/visits/\(visitA)/live-activities", key: dispatcher, body: nil, expect: 200, push: nil,
                ledger: [activityARenewed: "active", activityTablet: "dismissed", activityA: "renewed"]),
            Step(
                actor: "technician", description: "is en route, 14.5 km away", method: "POST", path: eventsA, key: technician,
                body: event("enRoute", ["kilometresAway": 14.5]), expect: 201, push: update("enRoute")),
            Step(
                actor: "dispatcher",
                description:
                    "hears the technician is stuck in traffic: running \(delayMinutes) minutes late (one progress per visit not "
                    + "reached yet: visit \(visitA)'s window moves \(delayMinutes) min later)",
                method: "POST", path: "/v1/technicians/\(technicianId)/delay", key: dispatcher,
                body: ["minutes": .number(Double(delayMinutes)), "reason": "Stuck in traffic on the ring road"], expect: 200,
                push: update("enRoute", windowMovedMinutes: delayMinutes), delays: [visitA]),
            fix(
                "8.2 km from the address: a progress (waits for the 5 s since the delay's update)", kilometres: 8.22,
                .appends(type: "progress", kilometresAway: 8.2), push: update("enRoute", kilometresAway: 8.2)),
            fix(
                "6.0 km: a progress, whose update waits (one progress update per 5 s)", kilometres: 6.02,
                .appends(type: "progress", kilometresAway: 6.0), push: nil),
            fix(
                "3.6 km: a progress whose update replaces 6.0's and goes when the 5 s are over", kilometres: 3.62,
                .appends(type: "progress", kilometresAway: 3.6), push: update("enRoute", kilometresAway: 3.6)),
            fix(
                "3.6 km still, a few seconds on (stopped at lights): the shown distance is the same, nothing is appended",
                kilometres: 3.58, .nothing, push: nil, pause: true),
            fix(
                "2.0 km, but the phone is only sure to 500 m (over the rules' 200): ignored", kilometres: 2.0,
                .ignored("inaccurate"), push: nil, pause: true, accuracyMetres: 500),
            fix(
                "0.8 km, inside the rules' 1 km: the server makes the visit nearby on its own", kilometres: 0.83,
                .appends(type: "nearby", kilometresAway: 0.8), push: update("nearby", alert: true, kilometresAway: 0.8),
                pause: true),
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
                    device: .activityARenewed, event: "end", status: "completed", priority: "10", hasAlert: false,
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
                actor: "dispatcher",
                description:
                    "books visit \(visitB) for another customer, in Simplified Chinese (the iPad gets a notification in Chinese)",
                method: "POST", path: "/v1/visits", key: dispatcher,
                body: schedule(visitB, customer: customerB, summary: "Radiator leak", locale: "zh-Hans"), expect: 201,
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
