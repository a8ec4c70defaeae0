import Runtime

/// The "long-open transaction" gauge, computed at scrape time: `livevisits_snapshot_horizon_age_seconds`,
/// the age of the oldest open transaction holding an id anywhere in the cluster (0 when there is none).
/// Followers read only below that transaction, so while it stays open they fall behind; alert on it.
/// `EventStore.snapshotHorizonHolder()` names the session (pid, application, query) for the operator.
///
///     SnapshotHorizonMetric(store: store).install()   // once, at start
public struct SnapshotHorizonMetric: Sendable {
    public static let name = "livevisits_snapshot_horizon_age_seconds"
    private let store: EventStore

    public init(store: EventStore) {
        self.store = store
    }

    /// Adds the collector to a registry (the process-wide one by default).
    public func install(in metrics: Metrics = .shared) {
        let metric = self
        metrics.addCollector { await metric.render() }
    }

    /// The gauge in Prometheus text format. When the database cannot be asked, the sample is left out (the
    /// series goes absent rather than reporting a made-up age).
    public func render() async -> String {
        var text =
            "# HELP \(Self.name) Age of the oldest open transaction holding back the snapshot horizon that event followers read below (0 when none).\n"
        text += "# TYPE \(Self.name) gauge\n"
        do {
            let age = try await store.snapshotHorizonHolder()?.transactionAgeSeconds ?? 0
            text += "\(Self.name) \(Metrics.format(max(0, age)))\n"
        } catch {
            // Unreachable database: no sample.
        }
        return text
    }
}
