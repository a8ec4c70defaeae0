import Synchronization

/// The worker's configuration alarm as a small state machine: a configuration error from APNs (bad key,
/// topic, clock) pauses sending for a while (doubling while it persists, up to a cap) instead of burning
/// retries; an accepted push clears it. Many `DeviceTokenNotForTopic` in a short window count as one.
final class SendingPause: Sendable {
    private struct State {
        var pausedUntil: Double?
        var consecutive = 0
        var notForTopic: [Double] = []
    }
    private let state = Mutex(State())
    private let configuration: OutboxConfiguration

    init(configuration: OutboxConfiguration) {
        self.configuration = configuration
    }

    /// Seconds left in the pause at `now`, or nil when sending may go on.
    func remaining(now: Double) -> Double? {
        state.withLock { s in
            guard let until = s.pausedUntil, until > now else { return nil }
            return until - now
        }
    }

    /// A configuration error: pauses (or extends the pause). Returns the pause's end.
    @discardableResult
    func configurationError(now: Double) -> Double {
        state.withLock { s in
            s.consecutive += 1
            let factor = Double(1 << min(s.consecutive - 1, 20))
            let length = min(configuration.configurationPauseCapSeconds, configuration.configurationPauseSeconds * factor)
            let until = max(s.pausedUntil ?? now, now + length)
            s.pausedUntil = until
            return until
        }
    }

    /// A `DeviceTokenNotForTopic`; true when enough came in the window to mean our topic is wrong (paused).
    func notForTopic(now: Double) -> Bool {
        let tooMany = state.withLock { s -> Bool in
            s.notForTopic.append(now)
            s.notForTopic.removeAll { $0 < now - configuration.topicAlertWindowSeconds }
            return s.notForTopic.count >= configuration.topicAlertThreshold
        }
        if tooMany { configurationError(now: now) }
        return tooMany
    }

    /// A push was accepted: the configuration is fine again.
    func accepted() {
        state.withLock { s in
            s.consecutive = 0
            s.pausedUntil = nil
        }
    }

    var isRaised: Bool { state.withLock { $0.consecutive > 0 } }
}
