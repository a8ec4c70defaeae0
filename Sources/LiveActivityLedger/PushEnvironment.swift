/// The push service a token belongs to (development builds: sandbox; TestFlight and App Store:
/// production). The registry stores it with each token; the worker routes by it.
public enum PushEnvironment: String, Sendable, Hashable, CaseIterable, Codable {
    case sandbox
    case production
}
