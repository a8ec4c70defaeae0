import Foundation
import Testing

/// The caps of contract §15: at most 20 live activities per visit and 50 devices per customer (a device counts
/// while it has a live push-to-start or notification token). Registering again what is already counted is
/// not a new one; retiring one frees its place; beyond, 409 `too_many_activities` / `too_many_devices`.
@Suite(.timeLimit(.minutes(5))) struct RegistrationCapTests {
    func activity(_ api: APIServer, _ visit: String, _ activity: String, key: String, token: String, device: String? = nil)
        async throws -> RawResponse
    {
        let d = device.map { #","deviceId":"\#($0)""# } ?? ""
        return try await api.call(
            "PUT", "/v1/visits/\(visit)/live-activities/\(activity)", key: key,
            json: #"{"pushToken":"\#(pushToken(token))","environment":"sandbox","version":1\#(d)}"#)
    }

    func device(_ api: APIServer, _ customer: String, _ device: String, _ kind: String, key: String, token: String)
        async throws -> RawResponse
    {
        let path =
            kind == "push-to-start"
            ? "/v1/customers/\(customer)/push-to-start-tokens/\(device)"
            : "/v1/customers/\(customer)/devices/\(device)/notification-token"
        return try await api.call("PUT", path, key: key, json: #"{"pushToken":"\#(pushToken(token))","environment":"sandbox"}"#)
    }

    func code(_ response: RawResponse) -> String? {
        (response.json?["error"] as? [String: Any])?["code"] as? String
    }

    func liveActivities(_ api: APIServer, _ visit: String) async throws -> Int? {
        try await api.call("GET", "/v1/visits/\(visit)", key: api.dispatcher).json?["liveActivities"] as? Int
    }

    @Test func theTwentyFirstActivityIsRefusedUntilOneRetires() async throws {
        try await withAPIServer { api in
            let visit = uniqueID("v")
            let customerId = uniqueID("c")
            try await api.schedule(visit, customer: customerId)
            let customer = try await api.key(.customer, customerId)
            for n in 1...20 {
                #expect(try await activity(api, visit, "a-\(n)", key: customer, token: "t\(n)").status == 204)
            }
            let refused = try await activity(api, visit, "a-21", key: customer, token: "t21")
            #expect(refused.status == 409 && code(refused) == "too_many_activities", "\(refused.text)")
            #expect(try await liveActivities(api, visit) == 20)
            // Registering a counted one again (same token, or a rotated one) is not a new one.
            #expect(try await activity(api, visit, "a-5", key: customer, token: "t5").status == 204)
            #expect(try await activity(api, visit, "a-5", key: customer, token: "t5-rotated").status == 204)
            // One forgotten frees its place; the forgotten one comes back only while there is room.
            #expect(try await api.call("DELETE", "/v1/visits/\(visit)/live-activities/a-3", key: customer).status == 204)
            #expect(try await activity(api, visit, "a-21", key: customer, token: "t21").status == 204)
            let back = try await activity(api, visit, "a-3", key: customer, token: "t3")
            #expect(back.status == 409 && code(back) == "too_many_activities")
            // One the app reports ended frees its place too.
            let ended = try await api.call(
                "PUT", "/v1/visits/\(visit)/live-activities/a-4/state", key: customer, json: #"{"state":"ended"}"#)
            #expect(ended.status == 204)
            #expect(try await activity(api, visit, "a-22", key: customer, token: "t22").status == 204)
            #expect(try await activity(api, visit, "a-23", key: customer, token: "t23").status == 409)
            #expect(try await liveActivities(api, visit) == 20)
            // Another visit has its own 20.
            let other = uniqueID("v")
            try await api.schedule(other, customer: customerId)
            #expect(try await activity(api, other, "a-1", key: customer, token: "o1").status == 204)
        }
    }

    /// A new activity from a device replaces that device's older one of the visit (contract §9): at the cap
    /// it takes the old one's place instead of being refused.
    @Test func aNewActivityReplacingItsDevicesOlderOneFitsAtTheCap() async throws {
        try await withAPIServer { api in
            let visit = uniqueID("v")
            let customerId = uniqueID("c")
            try await api.schedule(visit, customer: customerId)
            let customer = try await api.key(.customer, customerId)
            for n in 1...20 {
                #expect(try await activity(api, visit, "a-\(n)", key: customer, token: "t\(n)", device: "d-\(n)").status == 204)
            }
            #expect(try await activity(api, visit, "b-1", key: customer, token: "b1", device: "d-1").status == 204)
            #expect(try await liveActivities(api, visit) == 20)
            #expect(try await activity(api, visit, "b-2", key: customer, token: "b2", device: "d-new").status == 409)
            #expect(try await activity(api, visit, "b-3", key: customer, token: "b3").status == 409)
        }
    }

    /// Two registrations at the cap's last place at once: one is accepted, the others refused (the visit's
    /// advisory lock serializes the count and the insert).
    @Test func concurrentRegistrationsAtTheLastPlaceAdmitOne() async throws {
        try await withAPIServer { api in
            let visit = uniqueID("v")
            let customerId = uniqueID("c")
            try await api.schedule(visit, customer: customerId)
            let customer = try await api.key(.customer, customerId)
            for n in 1...19 {
                #expect(try await activity(api, visit, "a-\(n)", key: customer, token: "t\(n)").status == 204)
            }
            let statuses = try await withThrowingTaskGroup(of: Int.self) { group in
                for n in 1...6 {
                    group.addTask { try await activity(api, visit, "race-\(n)", key: customer, token: "r\(n)").status }
                }
                return try await group.reduce(into: [Int]()) { $0.append($1) }
            }
            #expect(statuses.sorted() == [204, 409, 409, 409, 409, 409], "\(statuses)")
            #expect(try await liveActivities(api, visit) == 20)
        }
    }

    @Test func theFiftyFirstDeviceIsRefusedUntilOneHasNoLiveToken() async throws {
        try await withAPIServer { api in
            let customerId = uniqueID("c")
            let customer = try await api.key(.customer, customerId)
            for n in 1...50 {
                let kind = n % 2 == 0 ? "push-to-start" : "notification-token"
                #expect(try await device(api, customerId, "d-\(n)", kind, key: customer, token: "t\(n)").status == 204)
            }
            for kind in ["push-to-start", "notification-token"] {
                let refused = try await device(api, customerId, "d-51", kind, key: customer, token: "t51")
                #expect(refused.status == 409 && code(refused) == "too_many_devices", "\(kind): \(refused.text)")
            }
            // A counted device's other token, or its token again, is not a new device.
            #expect(try await device(api, customerId, "d-2", "notification-token", key: customer, token: "n2").status == 204)
            #expect(try await device(api, customerId, "d-2", "push-to-start", key: customer, token: "t2").status == 204)
            // d-2 keeps counting while one of its tokens is live.
            #expect(
                try await api.call("DELETE", "/v1/customers/\(customerId)/push-to-start-tokens/d-2", key: customer).status == 204)
            #expect(try await device(api, customerId, "d-51", "push-to-start", key: customer, token: "t51").status == 409)
            // A device with no live token left frees its place.
            #expect(
                try await api.call("DELETE", "/v1/customers/\(customerId)/devices/d-2/notification-token", key: customer)
                    .status == 204)
            #expect(try await device(api, customerId, "d-51", "push-to-start", key: customer, token: "t51").status == 204)
            #expect(try await device(api, customerId, "d-52", "notification-token", key: customer, token: "t52").status == 409)
            // Another customer has their own 50.
            let otherId = uniqueID("c")
            let other = try await api.key(.customer, otherId)
            #expect(try await device(api, otherId, "d-1", "push-to-start", key: other, token: "o1").status == 204)
        }
    }
}
