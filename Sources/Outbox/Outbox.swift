import Postgres
import Runtime

/// The write side of push delivery. `enqueue` runs inside the caller's transaction (the one that appends
/// the event and updates the read model) and fans each `PushIntent` out into one `deliveries` row per
/// target with its own apns-id; `committed()` then wakes the workers once per burst.
///
///     let outbox = Outbox(pool: pool)
///     try await pool.withTransaction { c in
///         … append the event, update the read model …
///         try outbox.enqueue(intents, on: c)
///     }
///     outbox.committed()
public final class Outbox: Sendable {
    /// The channel workers LISTEN on.
    public static let channel = "livevisits_outbox"

    public let configuration: OutboxConfiguration
    private let clock: any WallClock
    private let pool: PostgresPool

    public init(
        pool: PostgresPool, configuration: OutboxConfiguration = OutboxConfiguration(), clock: any WallClock = SystemClock()
    ) {
        self.configuration = configuration
        self.clock = clock
        self.pool = pool
    }

    /// What one `enqueue` did.
    public struct EnqueueResult: Sendable, Hashable {
        /// Deliveries created (one per intent and target).
        public var created: Int = 0
        /// Older undelivered updates of the same targets replaced by the new ones.
        public var superseded: Int = 0
        /// Pending starts cancelled because their visit ended first.
        public var cancelledStarts: Int = 0

        mutating func add(_ other: EnqueueResult) {
            created += other.created
            superseded += other.superseded
            cancelledStarts += other.cancelledStarts
        }
    }

    /// Fans the intents out into deliveries, on a connection inside the caller's transaction.
    ///
    /// Only which targets exist is resolved here (registered, live activities; push-to-start devices),
    /// never the token, which is read at send time. Devices with Live Activities switched off get
    /// nothing; nothing is enqueued for a target after its `end`, at most one `start` per visit and
    /// push-to-start token, and nothing older than what a target already has pending or received. A new delivery
    /// supersedes the target's older pending updates, and a newer start the target's start still waiting
    /// to go out (never an end, never a start that may have gone out). Call `committed()` after COMMIT.
    @discardableResult
    public func enqueue(_ intents: [PushIntent], on connection: PostgresConnection) throws -> EnqueueResult {
        var result = EnqueueResult()
        for rows in try connection.pipeline(try enqueueStatements(intents)) {
            result.add(try Outbox.enqueueResult(rows))
        }
        return result
    }

    /// The statements of `enqueue`, for a caller that runs them in the same round trip as its own writes
    /// (`PostgresConnection.pipeline`); `enqueueResult` reads what each did. Usually one statement for all the
    /// intents, whatever their number: several only where an intent must see what an earlier one wrote
    /// (`layers`), in order.
    public func enqueueStatements(_ intents: [PushIntent]) throws -> [PostgresQuery] {
        for intent in intents { try Outbox.validate(intent) }
        let now = clock.now()
        return Outbox.layers(intents).map { layer in
            Outbox.enqueueQuery(
                layer, now: now, due: layer.map { dueTime(of: $0, now: now) },
                startEndExpiry: configuration.startEndExpirationSeconds)
        }
    }

    /// Checks an intent as `enqueue` does (an invalid one throws `OutboxError.invalidIntent`), for a caller
    /// that decides before it writes.
    public static func check(_ intent: PushIntent) throws { try validate(intent) }

    /// The intents in the fewest ordered groups in which none must see another's writes: an intent goes in the
    /// group after the last one holding an earlier intent it depends on, and intents that do not depend on
    /// one another share a statement (they read and write disjoint rows: every target names its visit).
    ///
    /// One intent depends on an earlier one of the same visit when both resolve to the same kind of target
    /// (Live Activities and channels; push-to-start tokens and pending starts; notification devices), which
    /// they may share, or when one is an `end` and the other a start (an end cancels the visit's pending
    /// starts, which the start audiences read and write). A batch of commands on different visits is one
    /// group; a hot visit's second command goes in the second.
    static func layers(_ intents: [PushIntent]) -> [[PushIntent]] {
        enum Family { case activity, start, alert }
        func family(_ intent: PushIntent) -> Family {
            switch intent.audience {
            case .liveActivities, .activity: .activity
            case .pushToStartTokens, .pushToStartDevice, .pendingStarts, .renewalStart: .start
            case .fallbackDevices: .alert
            }
        }
        func dependent(_ a: PushIntent, _ b: PushIntent) -> Bool {
            guard a.visitId == b.visitId else { return false }
            let (fa, fb) = (family(a), family(b))
            return fa == fb || (a.kind == .end && fb == .start) || (b.kind == .end && fa == .start)
        }
        var layers: [[PushIntent]] = []
        var placed: [(intent: PushIntent, layer: Int)] = []
        for intent in intents {
            let layer = placed.filter { dependent($0.intent, intent) }.map { $0.layer + 1 }.max() ?? 0
            if layer == layers.count { layers.append([]) }
            layers[layer].append(intent)
            placed.append((intent, layer))
        }
        return layers
    }

    /// `'pending'` as a value PostgreSQL does not fold while planning. Compared with the literal, a delivery's
    /// state implies the predicate of every partial index of pending rows, and a plan made once (on a small
    /// outbox: a new database, statistics taken while little was pending) may walk the whole of one for each
    /// probe: `deliveries_due` for a visit's waiting starts, `deliveries_paced_due` or `deliveries_by_visit`
    /// for rows taken by id. Compared with this, only the indexes led by what the statement probes qualify: a
    /// visit's starts (`deliveries_starts_by_visit`), a target's open rows (`deliveries_open_by_target`, its
    /// predicate spelled out beside it).
    static let pendingState = PostgresQuery(sql: "(SELECT 'pending'::text)")

    /// One statement that tells, per visit, whether an intent of it could have a target at all: a live (not
    /// retired) Live Activity or a channel of the visit, a live push-to-start or notification token of its
    /// customer, or a start of the visit still waiting. A visit with none gets nothing from `enqueue` — no
    /// delivery, nothing superseded, no start cancelled — so a caller that knows it may leave its intents
    /// out, and check in the same transaction that it still has none: for a visit marked `skipped` that has
    /// a target now the statement fails (SQLSTATE `targetsAppearedSQLState`, migration 0022), and with it the
    /// transaction. `targetsFound` reads the answers, in order.
    public static func targetsProbe(_ visits: [ProbedVisit]) -> PostgresQuery {
        let probe: PostgresQuery = """
            SELECT t.n, t.has_targets,
                   CASE WHEN t.skipped AND t.has_targets THEN livevisits_targets_appeared(t.visit_id) END AS appeared
            FROM (
                SELECT v.n, v.visit_id, v.skipped,
                       (EXISTS (SELECT 1 FROM live_activities la WHERE la.visit_id = v.visit_id AND la.retired_at_ms IS NULL)
                        OR EXISTS (SELECT 1 FROM channels ch WHERE ch.visit_id = v.visit_id)
                        OR EXISTS (SELECT 1 FROM push_to_start_tokens s
                                   WHERE s.customer_id = v.customer_id AND s.retired_at_ms IS NULL)
                        OR EXISTS (SELECT 1 FROM notification_tokens nt
                                   WHERE nt.customer_id = v.customer_id AND nt.retired_at_ms IS NULL)
                        OR EXISTS (SELECT 1 FROM deliveries d
                                   WHERE d.visit_id = v.visit_id AND d.kind = 'start'
                                     AND d.state = \(pendingState))) AS has_targets
                FROM unnest(\(PostgresBinaryArray(visits.map(\.visitId)))::text[],
                            \(PostgresBinaryArray(visits.map(\.customerId)))::text[],
                            \(PostgresBinaryArray(visits.map(\.skipped)))::boolean[])
                    WITH ORDINALITY AS v(visit_id, customer_id, skipped, n)
            ) t
            ORDER BY t.n
            """
        // Its plan (a few index probes per visit) holds for any number of visits; a visit's waiting starts are
        // found along its starts (`pendingState`).
        return probe.plannedOnce()
    }

    /// The answers of `targetsProbe` for `count` visits, in order: whether each could have a target.
    public static func targetsFound(_ rows: PostgresRows, count: Int) throws -> [Bool] {
        guard rows.count == count else {
            throw PostgresError(
                code: .protocolViolation, message: "the targets probe answered \(rows.count) rows for \(count) visits")
        }
        return try rows.rows.map { try $0.bool("has_targets") }
    }

    /// A visit `targetsProbe` asks about: `skipped`, its intents were left out of the transaction.
    public typealias ProbedVisit = (visitId: String, customerId: String, skipped: Bool)

    /// The SQLSTATE with which `targetsProbe` fails a transaction in which a skipped visit has a target.
    public static let targetsAppearedSQLState = "LV001"

    /// What one enqueue statement did.
    public static func enqueueResult(_ rows: PostgresRows) throws -> EnqueueResult {
        guard let row = rows.first else { return EnqueueResult() }
        return EnqueueResult(
            created: try row.int("created"), superseded: try row.int("superseded"), cancelledStarts: try row.int("cancelled"))
    }

    /// Wakes idle workers (one NOTIFY per burst, outside any transaction). Call after committing a
    /// transaction that enqueued something.
    public func committed() {
        pool.notifyAfterCommit(Outbox.channel)
    }

    /// When an intent may first be sent: `notBefore`, or for a start the arrival window's start minus
    /// the lead time, and never before now.
    func dueTime(of intent: PushIntent, now: Double) -> Double {
        var due = now
        if let notBefore = intent.notBefore {
            due = max(due, notBefore)
        } else if intent.kind == .start, let windowStart = intent.arrivalWindowStart {
            due = max(due, Double(windowStart) - configuration.startLeadTimeSeconds)
        }
        return due
    }

    static func validate(_ intent: PushIntent) throws {
        func invalid(_ message: String) -> OutboxError { OutboxError(code: .invalidIntent, message: message) }
        guard intent.priority == 5 || intent.priority == 10 else { throw invalid("apns-priority must be 5 or 10") }
        guard !intent.body.isEmpty else { throw invalid("the push body is empty") }
        guard !intent.visitId.isEmpty, !intent.customerId.isEmpty else { throw invalid("visitId and customerId are required") }
        switch (intent.kind, intent.audience) {
        case (.start, .pushToStartTokens), (.start, .pushToStartDevice), (.start, .pendingStarts), (.start, .renewalStart): break
        case (.update, .liveActivities), (.update, .activity), (.end, .liveActivities), (.end, .activity): break
        case (.alert, .fallbackDevices): break
        default: throw invalid("a \(intent.kind.rawValue) cannot go to that audience")
        }
        if let pacing = intent.pacingSeconds, intent.kind != .update || !(pacing > 0) {
            throw invalid("only updates are paced, by a positive interval")
        }
        if intent.kind == .update && intent.staleDate == nil {
            throw invalid("an update needs its stale date (its apns-expiration)")
        }
    }

    // The targets of each audience, for `enqueueQuery` (per intent `i`, under a LATERAL join).
    private static let activityTargets = """
        SELECT 'activity' || json_build_array(la.visit_id, la.activity_id)::text AS target,
               la.activity_id, la.device_id
        FROM live_activities la
        LEFT JOIN device_preferences p ON p.customer_id = i.customer_id AND p.device_id = la.device_id
        WHERE i.audience IN ('liveActivities', 'activity') AND la.visit_id = i.visit_id
          -- An activity the server ends itself (renewed, replaced) still gets that end.
          AND (la.retired_at_ms IS NULL
               OR (i.audience = 'activity' AND i.kind = 'end' AND la.retired_reason IN ('renewed', 'replaced')))
          AND COALESCE(p.live_activities_enabled, true)
          AND (i.activity IS NULL OR la.activity_id = i.activity)
        """
    // Contract §7: every state change of the visit also goes once to each of its broadcast channels (a target
    // like any other: superseding, "never after an end", budget per channel).
    private static let channelTargets = """
        SELECT ch.target, NULL::text, NULL::text
        FROM channels ch
        WHERE i.audience = 'liveActivities' AND ch.visit_id = i.visit_id AND ch.state = 'active'
        """
    // One target per visit and push-to-start token, named by the token's look-up hash (`delivery_start_target`;
    // md5 of the plain token for a row written before tokens were sealed): a token registered under two device ids is one target (the newest registration's device
    // is used), a rotated token a new one. Starts per device, from the ledger: a device that has or had an
    // activity of the visit (or dismissed one) gets no start of it, and an activity registered without a
    // device could be on any of them, so while one exists no device does. A renewal's start goes to the
    // device whose activity it renews (or to every device showing none, for one without a device), never
    // to a device that dismissed an activity of the visit.
    private static let startTargets = """
        SELECT * FROM (
            SELECT DISTINCT ON (target) target, activity_id, device_id FROM (
                SELECT delivery_start_target(i.starts_of, COALESCE(t.token_hash, md5(t.push_token))) AS target,
                       NULL::text AS activity_id, t.device_id, t.registered_at_ms
                FROM push_to_start_tokens t
                LEFT JOIN device_preferences p ON p.customer_id = t.customer_id AND p.device_id = t.device_id
                WHERE i.audience IN ('pushToStartTokens', 'pushToStartDevice', 'renewalStart')
                  AND t.customer_id = i.customer_id AND t.retired_at_ms IS NULL
                  AND COALESCE(p.live_activities_enabled, true)
                  AND (i.device IS NULL OR t.device_id = i.device)
                  AND NOT (SELECT EXISTS (
                      SELECT 1 FROM live_activities la
                      WHERE la.visit_id = i.visit_id
                        AND CASE WHEN i.audience = 'renewalStart'
                                 THEN la.device_id = t.device_id
                                      AND (la.retired_at_ms IS NULL OR la.retired_reason = 'dismissed')
                                 ELSE la.device_id = t.device_id OR la.device_id IS NULL END))
            ) tokens
            ORDER BY target, registered_at_ms DESC
        ) starts
        """
    // Notification devices: one target per visit and device. A device that dismissed an activity of the visit
    // gets none (the customer's choice wins over everything); otherwise off wins (a device with Live
    // Activities off gets the notification even with an activity of the visit), and a device showing no
    // activity of the visit gets it when no start can reach it (no push-to-start token) or when its activity
    // lapsed (not renewed: nothing shows the visit there any more).
    private static let alertTargets = """
        SELECT 'alert' || json_build_array(i.visit_id, n.customer_id, n.device_id)::text,
               NULL::text, n.device_id
        FROM notification_tokens n
        LEFT JOIN device_preferences p ON p.customer_id = n.customer_id AND p.device_id = n.device_id
        WHERE i.audience = 'fallbackDevices' AND n.customer_id = i.customer_id AND n.retired_at_ms IS NULL
          -- (Scalar subqueries, probes per device: as NOT EXISTS the planner may hash every token.)
          AND NOT (SELECT EXISTS (SELECT 1 FROM live_activities la
                                  WHERE la.visit_id = i.visit_id AND la.device_id = n.device_id
                                    AND la.retired_reason = 'dismissed'))
          AND (NOT COALESCE(p.live_activities_enabled, true)
               OR (NOT (SELECT EXISTS (SELECT 1 FROM live_activities la
                                       WHERE la.visit_id = i.visit_id AND la.device_id = n.device_id
                                         AND la.retired_at_ms IS NULL))
                   AND (NOT (SELECT EXISTS (SELECT 1 FROM push_to_start_tokens s
                                            WHERE s.customer_id = n.customer_id AND s.device_id = n.device_id
                                              AND s.retired_at_ms IS NULL))
                        OR (SELECT EXISTS (SELECT 1 FROM live_activities la
                                           WHERE la.visit_id = i.visit_id AND la.device_id = n.device_id
                                             AND la.retired_reason = 'lapsed')))))
        """
    // The waiting starts' own targets (so a start enqueued for a token rotated since is not re-planned for
    // the new one: it is cancelled at claim, and the new token has its own). Found along the visit's starts
    // (`pendingState`).
    private static let waitingStartTargets = """
        SELECT * FROM (
            SELECT DISTINCT d.target, NULL::text, d.device_id
            FROM deliveries d
            WHERE i.audience = 'pendingStarts' AND d.visit_id = i.visit_id AND d.kind = 'start'
              AND d.state = \(pendingState.sql) AND d.outcome_unknown_since IS NULL
              AND NOT EXISTS (SELECT 1 FROM live_activities la
                              WHERE la.visit_id = i.visit_id AND (la.device_id = d.device_id OR la.device_id IS NULL))
        ) waiting
        """

    /// One statement for intents that do not depend on one another (`layers`): their arrays unnested, each
    /// intent's targets resolved by its audience, then the same steps for every target — nothing after an end,
    /// nothing older than what the target has pending or received, the insert, superseding the target's older
    /// pending updates and starts, and an end's cancelling of its visit's pending starts.
    ///
    /// Its plan is made once per connection (`plannedOnce`): planning it is costly, and for its arrays
    /// PostgreSQL would otherwise plan it anew at every call. The generic plan holds because every per-target
    /// step is a scalar subquery or an `OFFSET 0` probe on an index, whatever the statistics say.
    private static func enqueueQuery(_ intents: [PushIntent], now: Double, due: [Double], startEndExpiry: Int64)
        -> PostgresQuery
    {
        func audience(_ intent: PushIntent) -> (name: String, activity: String?, device: String?, startsOf: String?) {
            switch intent.audience {
            case .liveActivities: ("liveActivities", nil, nil, nil)
            case .activity(let id): ("activity", id, nil, nil)
            case .pushToStartTokens: ("pushToStartTokens", nil, nil, intent.visitId)
            case .pushToStartDevice(let id): ("pushToStartDevice", nil, id, intent.visitId)
            // A renewal's start targets are its own: the visit's first start to the token must not block it.
            case .renewalStart(let key, let device): ("renewalStart", nil, device, intent.visitId + " renewal " + key)
            case .pendingStarts: ("pendingStarts", nil, nil, nil)
            case .fallbackDevices: ("fallbackDevices", nil, nil, nil)
            }
        }
        let audiences = intents.map(audience)
        let visits = intents.map(\.visitId)
        let customers = intents.map(\.customerId)
        let kinds = intents.map(\.kind.rawValue)
        let names = audiences.map(\.name)
        let activities = PostgresBinaryArray(audiences.map(\.activity))
        let devices = PostgresBinaryArray(audiences.map(\.device))
        let startsOf = PostgresBinaryArray(audiences.map(\.startsOf))
        let priorities = intents.map(\.priority)
        let timestamps = intents.map(\.apsTimestamp)
        let bodies = intents.map { String(decoding: $0.body, as: UTF8.self) }
        let staleDates = PostgresBinaryArray(intents.map(\.staleDate))
        let expires = PostgresBinaryArray(
            intents.map { $0.expiresAfterSendingSeconds ?? ($0.kind == .update ? nil : startEndExpiry) })
        let versions = intents.map(\.visitVersion)
        let recorded = intents.map(\.eventRecordedAt)
        let pacing = PostgresBinaryArray(intents.map(\.pacingSeconds))
        // Only the branches of the audiences present, and the cancelling of starts only with an end: PostgreSQL
        // sets up every node of a plan at each execution, run or not, and this statement's full plan made that
        // set-up a quarter of PostgreSQL's time for a lone command (each variant is its own prepared statement).
        let present = Set(names)
        var branches: [String] = []
        if present.contains("liveActivities") || present.contains("activity") { branches.append(activityTargets) }
        if present.contains("liveActivities") { branches.append(channelTargets) }
        if !present.isDisjoint(with: ["pushToStartTokens", "pushToStartDevice", "renewalStart"]) {
            branches.append(startTargets)
        }
        if present.contains("fallbackDevices") { branches.append(alertTargets) }
        if present.contains("pendingStarts") { branches.append(waitingStartTargets) }
        let targets = PostgresQuery(sql: branches.joined(separator: "\nUNION ALL\n"))
        let ends = kinds.contains(PushIntent.Kind.end.rawValue)
        let cancelled: PostgresQuery =
            ends
            ? """
            ,
            cancelled AS (
                UPDATE deliveries d
                SET state = 'cancelled', last_reason = 'visit ended before the start was sent',
                    finished_at = \(now)::float8
                WHERE d.visit_id = ANY (ARRAY(SELECT i.visit_id FROM intents i WHERE i.kind = 'end'))
                  AND d.kind = 'start' AND d.state = \(pendingState)
                RETURNING d.id
            )
            """ : ""
        let cancelledCount: PostgresQuery = ends ? "(SELECT count(*) FROM cancelled)" : "0"
        let query: PostgresQuery = """
            WITH intents AS (
                SELECT * FROM unnest(\(PostgresBinaryArray(visits))::text[], \(PostgresBinaryArray(customers))::text[],
                                     \(PostgresBinaryArray(kinds))::text[], \(PostgresBinaryArray(names))::text[],
                                     \(activities)::text[], \(devices)::text[], \(startsOf)::text[],
                                     \(PostgresBinaryArray(priorities))::integer[], \(PostgresBinaryArray(timestamps))::bigint[],
                                     \(PostgresBinaryArray(bodies))::text[], \(staleDates)::bigint[], \(expires)::bigint[],
                                     \(PostgresBinaryArray(versions))::bigint[], \(PostgresBinaryArray(recorded))::float8[],
                                     \(PostgresBinaryArray(due))::float8[], \(pacing)::float8[])
                    WITH ORDINALITY AS i(visit_id, customer_id, kind, audience, activity, device, starts_of, priority,
                                         aps_timestamp, body, stale_date, expires_after_sending, visit_version,
                                         event_recorded_at, due, paced_seconds, n)
            ),
            -- Each intent's targets, by its audience (a branch whose audience is not the intent's is not run).
            targets AS (
                SELECT i.*, t.target, t.activity_id, t.device_id
                FROM intents i
                CROSS JOIN LATERAL (
                    \(targets)
                ) t(target, activity_id, device_id)
            ),
            fresh AS (
                -- Scalar subqueries: each runs per target on its index whatever the statistics say.
                SELECT t.* FROM targets t
                WHERE NOT (SELECT EXISTS (
                        SELECT 1 FROM deliveries d
                        WHERE d.target = t.target AND d.kind IN ('start', 'end') AND d.state IN ('pending', 'sending', 'sent')
                          AND (d.kind = 'end' OR (d.kind = 'start' AND t.kind = 'start'
                               -- An older start still waiting, known not to have gone out, is replaced.
                               AND NOT (d.state = 'pending' AND d.outcome_unknown_since IS NULL
                                        AND d.aps_timestamp < t.aps_timestamp)))))
                  AND NOT (SELECT EXISTS (
                        SELECT 1 FROM deliveries d
                        WHERE d.target = t.target AND d.state IN ('pending', 'sending')
                          AND d.aps_timestamp > t.aps_timestamp))
                  AND NOT (SELECT EXISTS (
                        SELECT 1 FROM delivery_targets x
                        WHERE x.target = t.target AND x.last_sent_timestamp > t.aps_timestamp))
            ),
            inserted AS (
                INSERT INTO deliveries (apns_id, target, visit_id, customer_id, activity_id, device_id, kind, priority,
                                        aps_timestamp, body, stale_date, expires_after_sending, visit_version,
                                        event_recorded_at, created_at, next_attempt_at, paced_seconds)
                SELECT gen_random_uuid(), f.target, f.visit_id, f.customer_id, f.activity_id, f.device_id, f.kind,
                       f.priority, f.aps_timestamp, f.body, f.stale_date, f.expires_after_sending, f.visit_version,
                       f.event_recorded_at, \(now)::float8,
                       -- Paced (contract §8): not before the interval since the target's last paced send (acknowledged,
                       -- or on the wire now) has passed. GREATEST ignores the NULLs of a target without one.
                       CASE WHEN f.paced_seconds IS NULL THEN f.due ELSE GREATEST(f.due,
                           (SELECT x.last_paced_at FROM delivery_targets x WHERE x.target = f.target) + f.paced_seconds,
                           -- (OFFSET 0: along the target's open rows, not a scan of every row on the wire.)
                           (SELECT max(o.claimed_at) FROM (SELECT x.claimed_at, x.state, x.paced_seconds FROM deliveries x
                                                           WHERE x.target = f.target AND x.state IN ('pending', 'sending')
                                                           OFFSET 0) o
                            WHERE o.state = 'sending' AND o.paced_seconds IS NOT NULL)
                               + f.paced_seconds) END,
                       f.paced_seconds
                FROM fresh f
                ORDER BY f.n
                RETURNING id, target
            ),
            superseded AS (
                UPDATE deliveries d
                SET state = 'superseded', superseded_by = (SELECT i.id FROM inserted i WHERE i.target = d.target LIMIT 1),
                    finished_at = \(now)::float8
                -- The new rows' targets' pending rows, along deliveries_open_by_target: the targets an array, the
                -- index's predicate spelled as its own, and the state besides `pendingState`. That leaves the one
                -- index led by the target: whatever the statistics say when the plan is made, each target is one
                -- descent. (The rows were found first, then updated by id: planned on an outbox not yet analyzed,
                -- the update took `deliveries_by_visit`, whose second column is the id, and walked all of it once
                -- per id. As a join, the planner drove the update from a scan of every pending row.)
                WHERE d.target = ANY (ARRAY(SELECT i.target FROM inserted i))
                  AND d.state IN ('pending', 'sending') AND d.state = \(pendingState)
                  AND (d.kind = 'update' OR (d.kind = 'start' AND d.outcome_unknown_since IS NULL))
                RETURNING d.id
            )\(cancelled)
            SELECT (SELECT count(*) FROM inserted) AS created, (SELECT count(*) FROM superseded) AS superseded,
                   \(cancelledCount) AS cancelled
            """
        return query.plannedOnce()
    }
}
