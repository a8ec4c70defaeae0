import Foundation
import JSON
import Runtime

/// Channel management (iOS 18 broadcast channels) on Apple's management hosts, with the same provider
/// token, HTTP/2 transport, deadlines and answer classes as pushes:
///
/// - `createChannel` — `POST /1/apps/<bundle>/channels` `{"push-type": "LiveActivity", "message-storage-policy": N}`,
///   201 with the id in `apns-channel-id`;
/// - `readChannel` — `GET /1/apps/<bundle>/channels` with `apns-channel-id`;
/// - `listChannels` — `GET /1/apps/<bundle>/all-channels`, 200 `{"channels": [...]}`;
/// - `deleteChannel` — `DELETE /1/apps/<bundle>/channels` with `apns-channel-id`.
///
/// Every answer is typed: a refusal is an `APNsFailure` with Apple's reason (`CannotCreateChannelConfig`,
/// `ChannelNotRegistered`, `BadChannelId`, …) and its class; a success in a shape that cannot be used (a
/// 201 without `apns-channel-id`, a list that is not JSON) is a retryable `malformedAnswer`, never an
/// empty id or an empty list.
extension APNsClient {
    /// A channel's configuration as APNs reads it back.
    public struct ChannelConfiguration: Sendable, Hashable {
        public var channelId: String
        public var messageStoragePolicy: Int
        public var pushType: String

        public init(channelId: String, messageStoragePolicy: Int, pushType: String) {
            self.channelId = channelId
            self.messageStoragePolicy = messageStoragePolicy
            self.pushType = pushType
        }
    }

    /// Creates a channel; its id on success.
    public func createChannel(environment: APNsEnvironment, messageStoragePolicy: Int = 0) async -> Result<
        String, APNsFailure
    > {
        let body = JSONValue.object([
            JSONMember("message-storage-policy", .number(Double(messageStoragePolicy))),
            JSONMember("push-type", .string("LiveActivity")),
        ]).serialized()
        return await manage("create", .post, environment: environment, path: "channels", channelId: nil, body: body) {
            status, headers, _ in
            guard status == 201 || status == 200 else { return nil }
            guard let id = headers["apns-channel-id"], APNsRequest.isChannelId(id) else {
                return .failure("APNs answered \(status) without a usable apns-channel-id")
            }
            return .success(id)
        }
    }

    /// Reads a channel's configuration.
    public func readChannel(_ channelId: String, environment: APNsEnvironment) async -> Result<
        ChannelConfiguration, APNsFailure
    > {
        await manage("read", .get, environment: environment, path: "channels", channelId: channelId, body: []) {
            status, _, body in
            guard status == 200 else { return nil }
            guard let json = try? JSONValue.parse(body), json.isObject else {
                return .failure("APNs answered a channel read that is not a JSON object")
            }
            return .success(
                ChannelConfiguration(
                    channelId: channelId, messageStoragePolicy: Int(json["message-storage-policy"]?.integerValue ?? 0),
                    pushType: json["push-type"]?.stringValue ?? ""))
        }
    }

    /// Every channel the app holds in `environment`.
    public func listChannels(environment: APNsEnvironment) async -> Result<[String], APNsFailure> {
        await manage("list", .get, environment: environment, path: "all-channels", channelId: nil, body: []) {
            status, _, body in
            guard status == 200 else { return nil }
            guard let json = try? JSONValue.parse(body), let list = json["channels"]?.arrayElements else {
                return .failure("APNs answered a channel list that is not {\"channels\": [...]}")
            }
            var ids: [String] = []
            for element in list {
                guard let id = element.stringValue, APNsRequest.isChannelId(id) else {
                    return .failure("APNs listed a channel id that is not base64")
                }
                ids.append(id)
            }
            return .success(ids)
        }
    }

    /// Deletes a channel (204).
    public func deleteChannel(_ channelId: String, environment: APNsEnvironment) async -> Result<Void, APNsFailure> {
        await manage("delete", .delete, environment: environment, path: "channels", channelId: channelId, body: []) {
            status, _, _ in
            status == 204 || status == 200 ? .success(()) : nil
        }
    }

    /// One management exchange: the URL and headers, the provider token, the answer classified.
    /// `interpret` reads a success (nil: not a success status; `.failure(text)`: a success we cannot use).
    private func manage<Value>(
        _ operation: String, _ method: HTTP2Exchange.Method, environment: APNsEnvironment, path: String,
        channelId: String?, body: [UInt8],
        interpret: (Int, [String: String], [UInt8]) -> ManagementReading<Value>?
    ) async -> Result<Value, APNsFailure> {
        let started = ContinuousClock.now
        if let channelId, !APNsRequest.isChannelId(channelId) {
            return finish(
                operation, environment,
                .failure(
                    APNsFailure(
                        cause: .invalidRequest("channel id is not base64"), apnsId: "", latency: 0,
                        classification: .permanent)))
        }
        let url = configuration.channelsBaseURL(for: environment) + "/1/apps/\(configuration.bundleId)/\(path)"
        var headers = ["apns-request-id: \(UUID().uuidString.lowercased())"]
        if let channelId { headers.append("apns-channel-id: \(channelId)") }
        switch await performManagement(method, url: url, headers: headers, body: body, timeout: nil) {
        case .failure(let failure):
            return finish(operation, environment, .failure(failure))
        case .success(let answer):
            let latency = APNsClient.elapsed(since: started)
            let requestId = answer.headers["apns-request-id"] ?? ""
            if let reading = interpret(answer.status, answer.headers, answer.body) {
                switch reading {
                case .success(let value): return finish(operation, environment, .success(value), status: answer.status)
                case .failure(let text):
                    return finish(
                        operation, environment,
                        .failure(
                            APNsFailure(
                                cause: .malformedAnswer(text), status: answer.status, apnsId: requestId, latency: latency,
                                classification: .retryable)))
                }
            }
            let (reason, _) = APNsClient.parseErrorBody(answer.body)
            let classification = classifyRefusal(status: answer.status, reason: reason, token: answer.token)
            return finish(
                operation, environment,
                .failure(
                    APNsFailure(
                        cause: .rejected, status: answer.status, reason: reason, apnsId: requestId, latency: latency,
                        classification: classification)))
        }
    }

    private enum ManagementReading<Value> {
        case success(Value)
        case failure(String)
    }

    private func finish<Value>(
        _ operation: String, _ environment: APNsEnvironment, _ result: Result<Value, APNsFailure>, status: Int? = nil
    ) -> Result<Value, APNsFailure> {
        let help = "APNs channel-management answers by operation, HTTP status and reason"
        switch result {
        case .success:
            metricsSink.increment(
                "livevisits_apns_channel_requests_total", help: help,
                labels: ["operation": operation, "status": String(status ?? 200), "reason": ""])
        case .failure(let failure):
            metricsSink.increment(
                "livevisits_apns_channel_requests_total", help: help,
                labels: [
                    "operation": operation, "status": failure.status.map(String.init) ?? "none", "reason": failure.reasonLabel,
                ])
            if failure.classification == .configuration { alertSink.raise(failure.reasonLabel) }
            logSink.log(
                failure.classification == .configuration ? .error : .warning, "channel request failed",
                [
                    "apns.operation": operation, "apns.environment": environment.rawValue,
                    "apns.status": failure.status.map(String.init) ?? "none", "apns.reason": failure.reasonLabel,
                    "apns.class": failure.classification.rawValue,
                ])
        }
        return result
    }
}
