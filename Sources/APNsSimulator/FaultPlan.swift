import Runtime

/// The fault-injection state machine: what the next request meets. Pure and deterministic for a
/// given seed; `SimulatorCore` keeps it under its lock and acts on the decisions after unlocking.
struct FaultPlan: Sendable {
    struct Decision: Sendable, Equatable {
        /// Drop the connection instead of answering.
        var drop: FaultSettings.DropMode?
        /// Answer with this status and reason instead of validating.
        var failure: FaultSettings.Failure?
        /// Delay before answering, seconds.
        var latency: Double = 0
    }

    private var failures: [FaultSettings.Failure] = []
    private var fraction: FaultSettings.Fraction?
    private var random = SplitMix64(seed: UInt64.random(in: .min ... .max))
    private var unregistered: [String: Int64] = [:]
    private var latency: Double = 0
    private var latencyRemaining: Int?
    private var drop: FaultSettings.Drop?
    private var seenProviderTokens: Set<String> = []
    private var expiredProviderTokens: Set<String> = []
    private static let seenLimit = 10_000

    /// Applies settings; `nowMilliseconds` stamps unregistrations that give no timestamp.
    mutating func apply(_ settings: FaultSettings, nowMilliseconds: Int64) {
        if settings.clear == true { self = FaultPlan() }
        if let f = settings.failNext, let count = f.count, count > 0 { failures.append(f) }
        if let f = settings.failFraction {
            fraction = f.fraction > 0 ? f : nil
            if let seed = f.seed { random = SplitMix64(seed: seed) }
        }
        for u in settings.unregister ?? [] { unregistered[u.token.lowercased()] = u.timestamp ?? nowMilliseconds }
        if let l = settings.latency {
            latency = max(0, Double(l.milliseconds) / 1000)
            latencyRemaining = l.count
        }
        if let d = settings.dropConnection { drop = d.afterRequests >= 0 ? d : nil }
        if settings.expireProviderTokens == true { expiredProviderTokens.formUnion(seenProviderTokens) }
    }

    /// Decides for the next push request; `providerTokenID` is a fingerprint of its JWT, if any.
    mutating func decide(providerTokenID: String?) -> Decision {
        var decision = Decision()
        if latency > 0 {
            decision.latency = latency
            if let remaining = latencyRemaining {
                latencyRemaining = remaining - 1
                if remaining - 1 <= 0 {
                    latency = 0
                    latencyRemaining = nil
                }
            }
        }
        if let id = providerTokenID, seenProviderTokens.count < FaultPlan.seenLimit { seenProviderTokens.insert(id) }
        if let d = drop {
            if d.afterRequests == 0 {
                drop = nil
                decision.drop = d.mode
                return decision
            }
            drop?.afterRequests -= 1
        }
        if !failures.isEmpty {
            let failure = failures[0]
            let left = (failure.count ?? 1) - 1
            if left <= 0 { failures.removeFirst() } else { failures[0].count = left }
            decision.failure = failure
            return decision
        }
        if let id = providerTokenID, expiredProviderTokens.contains(id) {
            decision.failure = FaultSettings.Failure(status: 403, reason: SimulatorReason.expiredProviderToken)
            return decision
        }
        if let f = fraction, Double(random.next() >> 11) / Double(1 << 53) < f.fraction {
            decision.failure = FaultSettings.Failure(status: f.status, reason: f.reason)
        }
        return decision
    }

    /// The 410 timestamp (ms) when `token` is marked unregistered.
    func unregisteredTimestamp(token: String) -> Int64? { unregistered[token.lowercased()] }
}
