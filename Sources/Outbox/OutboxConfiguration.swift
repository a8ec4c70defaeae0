/// Tunables of the outbox and its worker. The defaults follow the contract; tests shorten them.
public struct OutboxConfiguration: Sendable {
    /// Retry backoff (full jitter; defaults 1 s base, 5 min cap).
    public var backoff: Backoff = Backoff()
    /// A delivery still failing this long after it was enqueued goes to `dead` with its last status.
    public var maximumAgeSeconds: Double = 4 * 3600
    /// Deliveries claimed per round trip.
    public var batchSize: Int = 500
    /// Claim loops per worker: while one batch is on the wire the next is claimed, so the claim's and the
    /// completion's round trips overlap the sends.
    public var concurrentBatches: Int = 4
    /// Under a stream of pushes (a batch of more than one), the first claim loop's claims start at least this
    /// far apart, so that the claim and the completion are shared by more pushes; a cycle that took longer
    /// claims again at once (0: never waits).
    public var claimGatherSeconds: Double = 0.008
    /// A wake-up that comes while a claim loop has a batch on the wire lets a second loop claim beside it only
    /// once that batch has run this long (on the worker's clock): a quick batch's own loop claims what came meanwhile,
    /// so loops do not race each other into small and empty claims; a slow one does not hold new pushes up.
    public var slowBatchSeconds: Double = 0.01
    /// Sends in flight at once within one batch.
    public var maximumConcurrentSends: Int = 500
    /// How long a claim holds; the heartbeat renews it every third of this.
    public var leaseSeconds: Double = 30
    /// Longest idle wait without a NOTIFY (the fallback poll).
    public var pollIntervalSeconds: Double = 1
    /// How often expired leases of dead workers are reclaimed.
    public var reapIntervalSeconds: Double = 5
    /// A start whose outcome is unknown is resent only if no Live Activity of its visit registered
    /// within this many seconds.
    public var startGraceSeconds: Double = 60
    /// A start is not sent earlier than this before its arrival window opens (Live Activities live 8 h).
    public var startLeadTimeSeconds: Double = 2 * 3600
    /// `apns-expiration` of starts and ends, after sending, when the intent does not say.
    public var startEndExpirationSeconds: Int64 = 4 * 3600
    /// How long sending pauses after a configuration error (doubles while it persists, up to the cap).
    public var configurationPauseSeconds: Double = 30
    public var configurationPauseCapSeconds: Double = 300
    /// This many `DeviceTokenNotForTopic` within `topicAlertWindowSeconds` mean our topic is wrong:
    /// a configuration alert that pauses sending.
    public var topicAlertThreshold: Int = 20
    public var topicAlertWindowSeconds: Double = 60
    /// The priority-10 pushes a target may get per hour before planned-10 updates go at 5 (contract §8;
    /// the rules' `budget`); `priority10PerHourFrequent` for a device that reported `frequentPushesEnabled`.
    public var priority10PerHour: Int = 12
    public var priority10PerHourFrequent: Int = 48
    /// iOS ends a Live Activity this long after it began: nothing is sent to it afterwards (contract §9).
    public var activityLifetimeSeconds: Double = 8 * 3600
    /// A still-active visit's Live Activity is renewed this long after it began (the rules'
    /// `activityRenewalSeconds`; contract §9), by a worker with an `ActivityRenewer`.
    public var activityRenewalSeconds: Double = 27_000
    /// A visit's activities are renewed at most this many times along a device's chain (the rules'
    /// `maxRenewals`); past it they lapse at `activityLifetimeSeconds`.
    public var maxRenewals: Int = 2
    /// How often a worker looks for activities due for renewal: one probe of the partial index, the
    /// renewal's transaction only when one is due. Short, whatever `activityRenewalSeconds` is, so a
    /// renewal's `end` reaches APNs within 10 s of the activity falling due (contract §9); an activity may
    /// register with a `beganAt` already in the past (a push-to-start's acknowledgement), so the due times
    /// known at one pass cannot stand in for looking again.
    public var renewalIntervalSeconds: Double = 5
    /// A broadcast channel is deleted at APNs this long after its visit's `end` broadcast was acknowledged
    /// (the rules' `channels.deleteAfterEndSeconds`; contract §7).
    public var channelDeleteAfterEndSeconds: Double = 3600
    /// How often a worker looks for channels due for deletion (and retries failed deletes).
    public var channelDeleteIntervalSeconds: Double = 5
    /// How often each worker reconciles the fleet's channels with APNs (one worker at a time).
    public var channelReconcileIntervalSeconds: Double = 600
    /// A channel creation claimed longer ago than this without an id is taken as abandoned (its process
    /// died between claiming and storing): another request may claim it again, and reconciliation may
    /// delete what APNs created for it.
    public var channelCreationTimeoutSeconds: Double = 30

    public init() {}
}
