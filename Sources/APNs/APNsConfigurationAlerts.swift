import Runtime

/// The `livevisits_apns_config_alert{reason}` gauge: 1 while a configuration problem (bad key,
/// topic, clock, CA) is the latest word from APNs, back to 0 once a push is accepted again.
final class APNsConfigurationAlerts: Sendable {
    static let name = "livevisits_apns_config_alert"
    static let help = "1 while APNs reports a configuration problem (sending should pause)"
    private let metrics: Metrics
    private let raised = Lock<Set<String>>([])

    init(metrics: Metrics) {
        self.metrics = metrics
        metrics.set(Self.name, help: Self.help, to: 0)
    }

    func raise(_ reason: String) {
        raised.withLock { _ = $0.insert(reason) }
        metrics.set(Self.name, help: Self.help, labels: ["reason": reason], to: 1)
        metrics.set(Self.name, help: Self.help, to: 1)
    }

    func clearAll() {
        let reasons = raised.withLock { set -> Set<String> in
            defer { set = [] }
            return set
        }
        guard !reasons.isEmpty else { return }
        for reason in reasons { metrics.set(Self.name, help: Self.help, labels: ["reason": reason], to: 0) }
        metrics.set(Self.name, help: Self.help, to: 0)
    }
}
