import Foundation
import JSON
import Runtime

/// Channel management as Apple serves it on its own hosts (sandbox :2195, production :2196), here on
/// the simulator's second listener:
///
/// - `POST /1/apps/<bundle>/channels` `{"message-storage-policy": 0|1, "push-type": "LiveActivity"}`
///   → 201 with the new id in `apns-channel-id` (400 `CannotCreateChannelConfig` at the limit);
/// - `GET /1/apps/<bundle>/channels` with `apns-channel-id` → 200 the channel's configuration;
/// - `GET /1/apps/<bundle>/all-channels` → 200 `{"channels": ["<id>", …]}`;
/// - `DELETE /1/apps/<bundle>/channels` with `apns-channel-id` → 204.
///
/// An unknown channel answers 404 `ChannelNotRegistered`, a malformed id 400 `BadChannelId`. Every
/// request needs a valid provider token, is recorded like a push, and meets the management
/// listener's own fault plan (`FaultSettings.listener = .channels`).
extension SimulatorCore {
    func channelManagementPlan(for request: ReceivedRequest) -> ResponsePlan {
        let now = request.receivedAt
        let tokenID = request.header("authorization").map { Logger.fingerprint($0) + String($0.utf8.count) }
        let (decision, sequence) = state.withLock { s -> (FaultPlan.Decision, Int) in
            s.requestsTotal += 1
            defer { s.nextSequence += 1 }
            return (s.channelPlan.decide(providerTokenID: tokenID), s.nextSequence)
        }
        var answer = decision.failure.map { Answer(status: $0.status, reason: $0.reason) } ?? manage(request, now: now)
        if decision.failure != nil { answer.providerToken = authorize(request, now: now).summary }
        let requestID = request.header("apns-request-id") ?? UUID().uuidString.lowercased()
        var headers: [(String, String)] = [("apns-request-id", requestID)]
        if let id = answer.channelId { headers.append(("apns-channel-id", id)) }
        var body: [UInt8] = []
        if let reason = answer.reason {
            headers.append(("content-type", "application/json"))
            body = JSONValue.object([JSONMember("reason", .string(reason))]).serialized()
        } else if let json = answer.body {
            headers.append(("content-type", "application/json"))
            body = json.serialized()
        }
        let record = SimulatedDelivery(
            sequence: sequence, receivedAt: now, connectionID: request.connectionID, streamID: request.streamID,
            method: request.method, path: request.path, deviceToken: nil,
            headers: request.headers.filter { $0.name != "authorization" }
                + (answer.channelId.map {
                    [("apns-channel-id", $0)]
                } ?? []),
            providerToken: answer.providerToken, payload: String(decoding: request.body, as: UTF8.self),
            payloadSize: request.bodySize, json: request.body.isEmpty ? nil : try? JSONValue.parse(request.body),
            status: answer.status, reason: answer.reason, apnsID: requestID, unregisteredTimestamp: nil,
            answered: false)
        if let mode = decision.drop {
            var dropped = record
            dropped.status = 0
            dropped.reason = SimulatorReason.connectionDropped
            return ResponsePlan(action: .drop(mode), delay: 0, record: dropped)
        }
        return ResponsePlan(
            action: .answer(status: answer.status, headers: headers, body: body), delay: decision.latency, record: record)
    }

    private struct Answer: Error {
        var status: Int
        var reason: String?
        var channelId: String?
        var body: JSONValue?
        var providerToken: ProviderTokenSummary?
    }

    private func authorize(_ request: ReceivedRequest, now: Double) -> (reason: String?, summary: ProviderTokenSummary?) {
        switch validator.verifier.verify(authorization: request.header("authorization"), now: now) {
        case .missing: return (SimulatorReason.missingProviderToken, nil)
        case .invalid(let summary): return (SimulatorReason.invalidProviderToken, summary)
        case .expired(let summary): return (SimulatorReason.expiredProviderToken, summary)
        case .valid(let summary): return (nil, summary)
        }
    }

    private func manage(_ request: ReceivedRequest, now: Double) -> Answer {
        let path = request.path.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)[0]
        let parts = path.split(separator: "/", omittingEmptySubsequences: false).map(String.init)
        // "", "1", "apps", bundle, "channels" | "all-channels"
        guard parts.count == 5, parts[0].isEmpty, parts[1] == "1", parts[2] == "apps", !parts[3].isEmpty,
            parts[4] == "channels" || parts[4] == "all-channels"
        else { return Answer(status: 404, reason: SimulatorReason.badPath) }
        let (refused, summary) = authorize(request, now: now)
        if let refused { return Answer(status: 403, reason: refused, providerToken: summary) }
        if let expected = configuration.expectedTopic {
            let bundle = String(expected.dropLast(APNsSimulator.topicSuffix.count))
            if parts[3] != bundle { return Answer(status: 400, reason: SimulatorReason.badTopic, providerToken: summary) }
        }
        func answer(_ status: Int, _ reason: String? = nil, channel: String? = nil, body: JSONValue? = nil) -> Answer {
            Answer(status: status, reason: reason, channelId: channel, body: body, providerToken: summary)
        }
        /// The `apns-channel-id` of a read or delete, checked as Apple does.
        func channelHeader() -> Result<String, Answer> {
            guard let id = request.header("apns-channel-id"), !id.isEmpty else {
                return .failure(answer(400, SimulatorReason.missingChannelId))
            }
            guard SimulatorCore.isChannelId(id) else { return .failure(answer(400, SimulatorReason.badChannelId)) }
            return .success(id)
        }
        switch (request.method, parts[4]) {
        case ("POST", "channels"):
            guard let json = try? JSONValue.parse(request.body), json.isObject else {
                return answer(400, SimulatorReason.badPayload)
            }
            guard let pushType = json["push-type"]?.stringValue else { return answer(400, SimulatorReason.missingPushType) }
            guard pushType == "LiveActivity" else { return answer(400, SimulatorReason.invalidPushType) }
            let policy = json["message-storage-policy"]?.integerValue ?? 0
            guard policy == 0 || policy == 1 else { return answer(400, SimulatorReason.badMessageStoragePolicy) }
            guard let id = state.withLock({ $0.channels.create(storagePolicy: Int(policy)) }) else {
                return answer(400, SimulatorReason.cannotCreateChannelConfig)
            }
            return answer(201, channel: id)
        case ("GET", "channels"):
            switch channelHeader() {
            case .failure(let refusal): return refusal
            case .success(let id):
                guard let policy = state.withLock({ $0.channels.policy(of: id) }) else {
                    return answer(404, SimulatorReason.channelNotRegistered)
                }
                return answer(
                    200, channel: id,
                    body: .object([
                        JSONMember("message-storage-policy", .number(Double(policy))),
                        JSONMember("push-type", .string("LiveActivity")),
                    ]))
            }
        case ("DELETE", "channels"):
            switch channelHeader() {
            case .failure(let refusal): return refusal
            case .success(let id):
                guard state.withLock({ $0.channels.remove(id) }) else {
                    return answer(404, SimulatorReason.channelNotRegistered)
                }
                return answer(204)
            }
        case ("GET", "all-channels"):
            let ids = state.withLock { $0.channels.ids }
            return answer(200, body: .object([JSONMember("channels", .array(ids.map(JSONValue.string)))]))
        default:
            return answer(405, SimulatorReason.methodNotAllowed)
        }
    }

    /// Base64 (Apple's channel ids are the standard alphabet, padded), 4 to 200 characters.
    static func isChannelId(_ id: String) -> Bool {
        let count = id.utf8.count
        guard count >= 4, count <= 200, count % 4 == 0 else { return false }
        return Data(base64Encoded: id) != nil
    }

    // MARK: in-process

    /// The channels held now, oldest first.
    func channelIds() -> [String] { state.withLock { $0.channels.ids } }

    /// Creates a channel as if another server (or an earlier life of this one) had asked for it.
    func createChannel() -> String? { state.withLock { $0.channels.create(storagePolicy: 0) } }
}
