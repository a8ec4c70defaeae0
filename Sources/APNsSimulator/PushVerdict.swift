import JSON

/// The validator's answer for one push.
struct PushVerdict: Sendable, Equatable {
    var status: Int
    var reason: String?
    var providerToken: ProviderTokenSummary?
    var json: JSONValue?

    static func accept(_ token: ProviderTokenSummary?, _ json: JSONValue?) -> PushVerdict {
        PushVerdict(status: 200, reason: nil, providerToken: token, json: json)
    }
}
