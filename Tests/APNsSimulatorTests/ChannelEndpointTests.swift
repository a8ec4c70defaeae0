import APNsSimulator
import Foundation
import Runtime
import Testing

/// The simulator's broadcast-channel endpoints over real HTTP/2 + TLS (curl): channel management on its own
/// listener, broadcasts on the push listener, Apple's validation and reasons, and the faults that reach them.
@Suite(.timeLimit(.minutes(2))) struct ChannelEndpointTests {
    static let channels = "/1/apps/\(SimulatorHarness.bundleID)/channels"
    static let allChannels = "/1/apps/\(SimulatorHarness.bundleID)/all-channels"
    static let broadcast = "/4/broadcasts/apps/\(SimulatorHarness.bundleID)"
    static let createBody = #"{"push-type":"LiveActivity","message-storage-policy":0}"#

    func manage(
        _ h: SimulatorHarness, _ method: String, _ path: String = ChannelEndpointTests.channels, body: String? = nil,
        headers: [String: String?] = [:]
    ) async throws -> PushResponse {
        var all: [String: String?] = ["apns-push-type": nil, "apns-topic": nil, "apns-priority": nil, "apns-expiration": nil]
        for (k, v) in headers { all[k] = v }
        return try await h.push(
            body: body, headers: all, method: method, path: path, baseURL: h.endpoint.channelsURL)
    }

    func broadcast(
        _ h: SimulatorHarness, channel: String?, body: String = SimulatorHarness.updateBody(), path: String = broadcast
    )
        async throws -> PushResponse
    {
        try await h.push(body: body, headers: ["apns-topic": nil, "apns-channel-id": channel], path: path)
    }

    @Test func managementCreatesReadsListsAndDeletesWithApplesAnswers() async throws {
        try await withSimulator { h in
            let created = try await manage(h, "POST", body: Self.createBody)
            let id = try #require(created.headers["apns-channel-id"])
            let read = try await manage(h, "GET", headers: ["apns-channel-id": id])
            let list = try await manage(h, "GET", Self.allChannels)
            let missing = try await manage(h, "GET")
            let bad = try await manage(h, "GET", headers: ["apns-channel-id": "not base64!"])
            let unknown = try await manage(h, "DELETE", headers: ["apns-channel-id": "AAAAAAAAAAAAAAAAAAAAAA=="])
            let wrongType = try await manage(h, "POST", body: #"{"push-type":"Alert"}"#)
            let wrongPolicy = try await manage(h, "POST", body: #"{"push-type":"LiveActivity","message-storage-policy":7}"#)
            let otherApp = try await manage(h, "POST", "/1/apps/com.other.app/channels", body: Self.createBody)
            let noJWT = try await manage(h, "POST", body: Self.createBody, headers: ["authorization": nil])
            let deviceOnManagement = try await manage(h, "POST", "/3/device/\(SimulatorHarness.token())", body: "{}")
            let managementOnPushes = try await h.push(body: Self.createBody, path: Self.channels)
            let deleted = try await manage(h, "DELETE", headers: ["apns-channel-id": id])
            let held = h.simulator.channels()
            let records = h.simulator.deliveries()

            #expect(created.status == 201 && created.httpVersion == "2" && created.headers["apns-request-id"] != nil)
            #expect(Data(base64Encoded: id)?.count == 16)
            #expect(read.status == 200 && read.json?["push-type"] as? String == "LiveActivity")
            #expect(read.json?["message-storage-policy"] as? Int == 0)
            #expect(list.status == 200 && list.json?["channels"] as? [String] == [id])
            #expect(missing.status == 400 && missing.reason == "MissingChannelId")
            #expect(bad.status == 400 && bad.reason == "BadChannelId")
            #expect(unknown.status == 404 && unknown.reason == "ChannelNotRegistered")
            #expect(wrongType.status == 400 && wrongType.reason == "InvalidPushType")
            #expect(wrongPolicy.status == 400 && wrongPolicy.reason == "BadMessageStoragePolicy")
            #expect(otherApp.status == 400 && otherApp.reason == "BadTopic")
            #expect(noJWT.status == 403 && noJWT.reason == "MissingProviderToken")
            #expect(deviceOnManagement.status == 404 && deviceOnManagement.reason == "BadPath")
            #expect(managementOnPushes.status == 404 && managementOnPushes.reason == "BadPath")
            #expect(deleted.status == 204)
            #expect(held.isEmpty)
            #expect(records.first?.header("apns-channel-id") == id && records.first?.status == 201)
            #expect(records.allSatisfy { $0.header("authorization") == nil })
        }
    }

    @Test func broadcastsAreValidatedAsAppleDoesAndAStartIsRefused() async throws {
        try await withSimulator { h in
            let id = try #require(h.simulator.createChannel())
            let ok = try await broadcast(h, channel: id)
            let end = try await broadcast(h, channel: id, body: SimulatorHarness.endBody())
            let start = try await broadcast(h, channel: id, body: SimulatorHarness.startBody())
            let missing = try await broadcast(h, channel: nil)
            let bad = try await broadcast(h, channel: "%%%")
            let unknown = try await broadcast(h, channel: "AAAAAAAAAAAAAAAAAAAAAA==")
            let otherApp = try await broadcast(h, channel: id, path: "/4/broadcasts/apps/com.other.app")
            let notJSON = try await broadcast(h, channel: id, body: "nope")
            let records = h.simulator.deliveries()
            #expect(ok.status == 200 && end.status == 200)
            #expect(start.status == 400 && start.reason == "BadPayload")
            #expect(missing.status == 400 && missing.reason == "MissingChannelId")
            #expect(bad.status == 400 && bad.reason == "BadChannelId")
            #expect(unknown.status == 404 && unknown.reason == "ChannelNotRegistered")
            #expect(otherApp.status == 400 && otherApp.reason == "BadTopic")
            #expect(notJSON.status == 400 && notJSON.reason == "BadPayload")
            #expect(records.first?.path == Self.broadcast && records.first?.deviceToken == nil)
            #expect(records.first?.summaryLine.contains("channel=\(id)") == true)
        }
    }

    @Test func faultsReachTheListenerTheyNameAndTheChannelLimitAndForgettingWork() async throws {
        try await withSimulator { h in
            let failCreate = try await h.control(
                "POST", "/_sim/faults",
                body: #"{"listener":"channels","failNext":{"count":1,"status":500,"reason":"InternalServerError"}}"#)
            let push = try await h.push()  // the push listener's plan is untouched
            let failed = try await manage(h, "POST", body: Self.createBody)
            let limit = try await h.control("POST", "/_sim/faults", body: #"{"channelLimit":1}"#)
            let first = try await manage(h, "POST", body: Self.createBody)
            let overLimit = try await manage(h, "POST", body: Self.createBody)
            let id = try #require(first.headers["apns-channel-id"])
            let forget = try await h.control("POST", "/_sim/faults", body: #"{"forgetChannels":["\#(id)"]}"#)
            let afterForget = try await broadcast(h, channel: id)
            let list = try await manage(h, "GET", Self.allChannels)
            let badListener = try await h.control("POST", "/_sim/faults", body: #"{"listener":"mgmt"}"#)
            let badForget = try await h.control("POST", "/_sim/faults", body: #"{"forgetChannels":[1]}"#)
            #expect(failCreate.status == 200 && limit.status == 200 && forget.status == 200)
            #expect(push.status == 200)
            #expect(failed.status == 500 && failed.reason == "InternalServerError" && failed.headers["apns-channel-id"] == nil)
            #expect(first.status == 201)
            #expect(overLimit.status == 400 && overLimit.reason == "CannotCreateChannelConfig")
            #expect(afterForget.status == 404 && afterForget.reason == "ChannelNotRegistered")
            #expect(list.json?["channels"] as? [String] == [])
            #expect(badListener.status == 400 && badListener.body.contains("listener"))
            #expect(badForget.status == 400 && badForget.body.contains("forgetChannels[0]"))
        }
    }
}
