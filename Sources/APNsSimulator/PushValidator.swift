import JSON

/// Checks one `/3/device/…` request the way APNs does, in roughly APNs's order: method, path and
/// token, provider token, headers, then the payload and its Live Activity `aps` fields.
/// Pure apart from the verifier's cache: the same request at the same time gets the same verdict.
struct PushValidator: Sendable {
    let verifier: ProviderTokenVerifier
    let expectedTopic: String?
    let maximumPayloadSize: Int

    func validate(_ request: ReceivedRequest, now: Double) -> PushVerdict {
        var tokenSummary: ProviderTokenSummary?
        let json = request.body.isEmpty ? nil : try? JSONValue.parse(request.body)
        func refuse(_ status: Int, _ reason: String) -> PushVerdict {
            PushVerdict(status: status, reason: reason, providerToken: tokenSummary, json: json)
        }

        guard request.method == "POST" else { return refuse(405, SimulatorReason.methodNotAllowed) }
        // A broadcast (`/4/broadcasts/apps/<bundle>`, iOS 18 channels) names its channel in a header and
        // its app in the path; a device push names its token in the path.
        let broadcastBundle = request.broadcastBundle
        if let bundle = broadcastBundle {
            guard !bundle.isEmpty else { return refuse(404, SimulatorReason.badPath) }
            guard let channel = request.header("apns-channel-id"), !channel.isEmpty else {
                return refuse(400, SimulatorReason.missingChannelId)
            }
            guard SimulatorCore.isChannelId(channel) else { return refuse(400, SimulatorReason.badChannelId) }
        } else {
            guard let token = request.deviceToken else { return refuse(404, SimulatorReason.badPath) }
            guard !token.isEmpty else { return refuse(400, SimulatorReason.missingDeviceToken) }
            guard PushValidator.isDeviceToken(token) else { return refuse(400, SimulatorReason.badDeviceToken) }
        }

        for name in [
            "apns-topic", "apns-push-type", "apns-priority", "apns-expiration", "apns-id", "authorization", "apns-channel-id",
        ]
        where request.headerCount(name) > 1 {
            return refuse(400, SimulatorReason.duplicateHeaders)
        }

        switch verifier.verify(authorization: request.header("authorization"), now: now) {
        case .missing: return refuse(403, SimulatorReason.missingProviderToken)
        case .invalid(let summary):
            tokenSummary = summary
            return refuse(403, SimulatorReason.invalidProviderToken)
        case .expired(let summary):
            tokenSummary = summary
            return refuse(403, SimulatorReason.expiredProviderToken)
        case .valid(let summary):
            tokenSummary = summary
        }

        if let bundle = broadcastBundle {
            // No topic: the app is in the path. Only Live Activities broadcast.
            guard request.header("apns-push-type") == "liveactivity" else {
                return refuse(400, SimulatorReason.invalidPushType)
            }
            if let expectedTopic, bundle + APNsSimulator.topicSuffix != expectedTopic {
                return refuse(400, SimulatorReason.badTopic)
            }
            return validateHeadersAndPayload(request, json: json, isLiveActivity: true, broadcast: true, refuse: refuse)
                ?? .accept(tokenSummary, json)
        }
        guard let topic = request.header("apns-topic"), !topic.isEmpty else { return refuse(400, SimulatorReason.missingTopic) }
        // The topic goes with the push type: `<bundle>.push-type.liveactivity` for a Live Activity push,
        // the bare bundle id for an ordinary notification (`alert`, contract §9).
        let pushType = request.header("apns-push-type")
        guard pushType == "liveactivity" || pushType == "alert" else { return refuse(400, SimulatorReason.invalidPushType) }
        let isLiveActivity = pushType == "liveactivity"
        if isLiveActivity {
            guard topic.hasSuffix(APNsSimulator.topicSuffix), topic.count > APNsSimulator.topicSuffix.count else {
                return refuse(400, SimulatorReason.badTopic)
            }
        } else if topic.hasSuffix(APNsSimulator.topicSuffix) {
            return refuse(400, SimulatorReason.badTopic)
        }
        if let expectedTopic {
            let expected =
                isLiveActivity ? expectedTopic : String(expectedTopic.dropLast(APNsSimulator.topicSuffix.count))
            if topic != expected { return refuse(400, SimulatorReason.deviceTokenNotForTopic) }
        }
        return validateHeadersAndPayload(request, json: json, isLiveActivity: isLiveActivity, broadcast: false, refuse: refuse)
            ?? .accept(tokenSummary, json)
    }

    /// The checks device pushes and broadcasts share: priority, expiration, id, size, payload. A
    /// broadcast's `aps.event` must not be `start` (a channel starts nothing). nil: it passes.
    private func validateHeadersAndPayload(
        _ request: ReceivedRequest, json: JSONValue?, isLiveActivity: Bool, broadcast: Bool,
        refuse: (Int, String) -> PushVerdict
    ) -> PushVerdict? {
        if let priority = request.header("apns-priority"), priority != "5", priority != "10" {
            return refuse(400, SimulatorReason.badPriority)
        }
        if let expiration = request.header("apns-expiration"),
            expiration.isEmpty || expiration.count > 12 || !expiration.utf8.allSatisfy({ $0 >= 48 && $0 <= 57 })
        {
            return refuse(400, SimulatorReason.badExpirationDate)
        }
        if let id = request.header("apns-id"), !PushValidator.isUUID(id) { return refuse(400, SimulatorReason.badMessageId) }
        if let collapse = request.header("apns-collapse-id"), collapse.utf8.count > 64 {
            return refuse(400, SimulatorReason.badCollapseId)
        }

        guard request.bodySize > 0 else { return refuse(400, SimulatorReason.payloadEmpty) }
        guard request.bodySize <= maximumPayloadSize else { return refuse(413, SimulatorReason.payloadTooLarge) }
        guard let json, json.isObject else { return refuse(400, SimulatorReason.badPayload) }
        let validPayload = isLiveActivity ? PushValidator.isLiveActivityPayload(json) : PushValidator.isAlertPayload(json)
        guard validPayload else { return refuse(400, SimulatorReason.badPayload) }
        if broadcast, json["aps"]?["event"]?.stringValue == "start" { return refuse(400, SimulatorReason.startOnChannel) }
        return nil
    }

    /// Hex, even length, 8 to 100 bytes (APNs tokens are 32 bytes today; Live Activity tokens may be longer).
    static func isDeviceToken(_ token: String) -> Bool {
        let count = token.utf8.count
        return count >= 16 && count <= 200 && count % 2 == 0
            && token.utf8.allSatisfy { PushValidator.isHexDigit($0) }
    }

    /// `8-4-4-4-12` hex digits, any case.
    static func isUUID(_ text: String) -> Bool {
        // 8-4-4-4-12 hex digits, on the bytes (every push's apns-id passes here).
        let bytes = Array(text.utf8)
        guard bytes.count == 36 else { return false }
        return bytes.indices.allSatisfy { i in
            [8, 13, 18, 23].contains(i) ? bytes[i] == UInt8(ascii: "-") : PushValidator.isHexDigit(bytes[i])
        }
    }

    /// The Live Activity rules: `aps.timestamp` an integer, `aps.event` start|update|end,
    /// `aps.content-state` an object; `start` also needs `attributes-type` (string), `attributes`
    /// (object) and `alert`; optional dates and scores must be numbers.
    static func isLiveActivityPayload(_ json: JSONValue) -> Bool {
        guard let aps = json["aps"], aps.isObject else { return false }
        guard let timestamp = aps["timestamp"]?.integerValue, timestamp >= 0 else { return false }
        guard let event = aps["event"]?.stringValue, ["start", "update", "end"].contains(event) else { return false }
        guard aps["content-state"]?.isObject == true else { return false }
        for key in ["stale-date", "dismissal-date"] where aps[key] != nil {
            guard aps[key]?.integerValue != nil else { return false }
        }
        if let score = aps["relevance-score"], score.doubleValue == nil { return false }
        if let alert = aps["alert"] {
            switch alert {
            case .string: break
            case .object: break
            default: return false
            }
        }
        if event == "start" {
            guard aps["attributes-type"]?.stringValue?.isEmpty == false, aps["attributes"]?.isObject == true,
                aps["alert"] != nil
            else { return false }
        }
        return true
    }

    /// An ordinary notification: `aps` an object whose `alert` is a string or an object.
    static func isAlertPayload(_ json: JSONValue) -> Bool {
        guard let aps = json["aps"], aps.isObject, let alert = aps["alert"] else { return false }
        switch alert {
        case .string, .object: return true
        default: return false
        }
    }

    static func isHexDigit(_ byte: UInt8) -> Bool {
        (byte >= 48 && byte <= 57) || (byte >= 65 && byte <= 70) || (byte >= 97 && byte <= 102)
    }
}
