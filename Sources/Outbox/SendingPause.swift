import Runtime

/// The worker's configuration alarm as a small state machine: a configuration error from APNs (bad key,
/// topic, clock) pauses sending for a while (doubling while it persists, up to a cap) instead of burning
/// retries; an accepted push in a batch without one clears it. `DeviceTokenNotForTopic` answers are
/// counted in a sliding window: past the threshold they mean our topic is wrong, and the worker treats
/// them as configuration errors (the pause is the worker's, once per batch; see `OutboxWorker`).
final class SendingPause: Sendable {
    private struct State {
        var pausedUntil: Double?
        var consecutive = 0
        var notForTopic: [Double] = []
    }
    private let state = Lock(State())
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

    /// Counts a `DeviceTokenNotForTopic`; true once `topicAlertThreshold` of them (this one included) came
    /// within `topicAlertWindowSeconds`: the topic looks wrong, so this answer is a configuration error,
    /// not a verdict on the token. Pausing is left to the caller (once per batch).
    func notForTopic(now: Double) -> Bool {
        state.withLock { s -> Bool in
            s.notForTopic.append(now)
            s.notForTopic.removeAll { $0 < now - configuration.topicAlertWindowSeconds }
            return s.notForTopic.count >= configuration.topicAlertThreshold
        }
    }

    /// A push was accepted: the configuration is fine again.
    func accepted() {
        state.withLock { s in
            s.consecutive = 0
            s.pausedUntil = nil
        }
    }

}
