/// The APNs service a token belongs to (development builds: sandbox; TestFlight and App Store: production).
public enum PushEnvironment: String, Sendable, Hashable, CaseIterable {
    case sandbox, production
}
