/// Which APNs service a device token belongs to. A token is only valid on the service of the build
/// that produced it: development builds use `sandbox`, TestFlight and the App Store `production`.
public enum APNsEnvironment: String, Sendable, Hashable, CaseIterable, Codable {
    case sandbox
    case production

    /// Apple's host for this environment.
    public var defaultBaseURL: String {
        switch self {
        case .sandbox: "https://api.sandbox.push.apple.com"
        case .production: "https://api.push.apple.com"
        }
    }

    /// Apple's channel-management host for this environment (broadcast channels, iOS 18).
    public var defaultChannelsBaseURL: String {
        switch self {
        case .sandbox: "https://api-manage-broadcast.sandbox.push.apple.com:2195"
        case .production: "https://api-manage-broadcast.push.apple.com:2196"
        }
    }
}
