/// The outbox's rules as pure functions: what to do with a claimed delivery before sending, and how an
/// outcome ends its lease. The worker performs what these return.
enum DeliveryPolicy {
    /// What to do with a claimed delivery.
    enum Preflight: Sendable, Hashable {
        case send(OutgoingPush)
        case finish(DeliveryCompletion)
    }

    /// The reason of a delivery cancelled because its Live Activity is past iOS's 8 hours.
    static let lapsedReason = "the live activity lapsed: iOS ends it 8 hours after it began"

    /// Decides whether a claimed delivery goes out, and with which token and `apns-expiration`.
    static func preflight(_ d: ClaimedDelivery, now: Double, configuration: OutboxConfiguration) -> Preflight {
        func finish(_ state: DeliveryState, _ reason: String) -> Preflight {
            .finish(DeliveryCompletion(id: d.id, state: state, reason: reason))
        }
        guard let token = d.pushToken, let environment = d.environment, !d.tokenRetired else {
            return finish(.cancelled, d.isChannel ? "channel forgotten" : "token retired")
        }
        // An ordinary notification is what a device with Live Activities off gets (contract §9).
        guard d.liveActivitiesEnabled || d.kind == .alert else { return finish(.cancelled, "live activities switched off") }
        if d.kind == .start, d.startTokenReplaced {
            return finish(.cancelled, "push-to-start token replaced; the new token has its own start")
        }
        // Contract §9: iOS has ended the activity; a push to it would change nothing.
        if d.kind == .update || d.kind == .end, let began = d.activityBeganAtMs,
            now - Double(began) / 1000 >= configuration.activityLifetimeSeconds
        {
            return finish(.cancelled, DeliveryPolicy.lapsedReason)
        }
        if let last = d.lastSentTimestamp, d.apsTimestamp < last {
            return finish(.superseded, "target already received a newer state")
        }
        // An update measured from its send (a catch-up: `expiresAfterSending` set) does not expire unsent.
        if d.kind == .update, d.expiresAfterSending == nil, let stale = d.staleDate, Double(stale) < now {
            return finish(.expired, "past its apns-expiration")
        }
        if d.kind == .start, d.outcomeUnknownSince != nil, d.activityRegisteredSinceUnknown {
            return finish(.sent, "a live activity of the visit registered after the unknown send")
        }
        // Checked again at send time: a deferred start waits hours, and an activity may have been started
        // meanwhile (by the app, or by a start to another token). A second start is a second activity.
        if d.kind == .start, d.visitHasLiveActivity {
            return finish(.cancelled, "the visit already has a live activity")
        }
        // Contract §8: a planned-10 update over the target's hourly allowance goes at 5 (headers only).
        // Starts and ends always go at 10 (and count).
        var priority = PushPriority(rawValue: d.priority) ?? .immediate
        let allowance =
            d.frequentPushesEnabled ? configuration.priority10PerHourFrequent : configuration.priority10PerHour
        if d.kind == .update, priority == .immediate, d.priority10SentLastHour >= allowance {
            priority = .low
        }
        let sentAt = Int64(now.rounded(.down))
        let expiration: Int64
        switch (d.kind, d.staleDate, d.expiresAfterSending) {
        case (.update, let stale?, nil):
            expiration = stale
        case (.update, let stale?, let after?):
            // A catch-up: its stale date, or at once when that has passed.
            expiration = max(stale, sentAt + after)
        default:
            expiration = sentAt + (d.expiresAfterSending ?? configuration.startEndExpirationSeconds)
        }
        if d.isChannel {
            return .send(
                OutgoingPush(
                    channelId: token, environment: environment, priority: priority, expiration: expiration, apnsId: d.apnsId,
                    body: d.body))
        }
        return .send(
            OutgoingPush(
                deviceToken: token, environment: environment, priority: priority, expiration: expiration, apnsId: d.apnsId,
                body: d.body, pushType: d.kind == .alert ? .alert : .liveActivity))
    }

    /// How a send's outcome ends the lease. `tokenRetired` tells, for a dead-token answer, whether the
    /// token was actually retired (a 410 older than the latest registration is not).
    static func completion(
        of d: ClaimedDelivery, outcome: PushOutcome, sentPriority: Int? = nil, attemptedAt: Double, now: Double,
        tokenRetired: Bool,
        configuration: OutboxConfiguration, random: Double
    ) -> DeliveryCompletion {
        var c = DeliveryCompletion(
            id: d.id, state: .sent, attempt: d.attempt, attemptedAt: attemptedAt, latency: outcome.latency,
            sentPriority: sentPriority)
        guard case .failed(let failure) = outcome else {
            c.status = 200
            if case .accepted(_, let uniqueId) = outcome { c.uniqueId = uniqueId }
            return c
        }
        c.status = failure.status
        c.reason = failure.reason
        c.outcomeUnknownSince = d.outcomeUnknownSince
        let retryAt = now + configuration.backoff.delay(retry: max(0, d.attempt - 1), unit: random)
        let tooOld = now - d.createdAt >= configuration.maximumAgeSeconds
        switch failure.classification {
        case .retryable:
            if tooOld {
                c.state = .dead
            } else if d.kind == .start && failure.outcomeUnknown {
                // The start may have arrived: resend only after the grace period, and only if no activity registers.
                let since = d.outcomeUnknownSince ?? attemptedAt
                c.state = .pending
                c.outcomeUnknownSince = since
                c.nextAttemptAt = max(retryAt, since + configuration.startGraceSeconds)
            } else {
                c.state = .pending
                c.nextAttemptAt = retryAt
            }
            c.retryAfter = c.nextAttemptAt.map { $0 - now }
        case .tokenDead:
            if tokenRetired {
                c.state = .cancelled
            } else if tooOld {
                c.state = .dead
            } else {
                // Registered again after APNs's verdict: the new registration wins; try again.
                c.state = .pending
                c.nextAttemptAt = retryAt
            }
        case .configuration:
            // Not the delivery's fault: keep it, do not age it into the dead letters while paused.
            c.state = .pending
            c.nextAttemptAt = now + configuration.configurationPauseSeconds
        case .permanent:
            c.state = .dead
        }
        return c
    }
}
