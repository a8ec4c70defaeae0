/// How `EventStore.append(_:)` commits: each append in its own transaction, or concurrent appends batched
/// into one statement and one commit (group commit). The static `append(_:on:limits:)` is never batched.
public struct GroupCommit: Sendable {
    public enum Mode: String, Sendable, CustomStringConvertible {
        /// One autocommitted statement per append (the path of `append(_:on:limits:)`).
        case direct
        /// Appends waiting at the same time share one statement and one commit.
        case batched
        public var description: String { rawValue }
    }

    public var mode: Mode
    /// The most appends one batch carries.
    public var maxBatchSize: Int
    /// The most events one batch carries (a batch stops growing at whichever limit it reaches first).
    public var maxBatchEvents: Int
    /// Batches in flight at once, each run by a worker thread with its own connection (in addition to the
    /// pool's). While they are all busy, new appends queue and leave together in the next batch: that
    /// queueing is what forms batches, no timer is involved. The default, 3, is a compromise measured with
    /// `livevisits-bench append --batches N` at 16 writers on 2 cores: when commits are cheap (a quick
    /// fsync) fewer, larger batches win (2: 0.80–0.87× pgbench, 3: 0.83–0.87×, 4: 0.75–0.78×, 8 or 16
    /// fall to half); when each commit waits long on a slow disk, a batch waiting on its flush holds the
    /// next appends back and more batches in flight win (4 beat 2 by 1.4–2.5× on a loaded machine).
    public var maxConcurrentBatches: Int

    public init(mode: Mode = .batched, maxBatchSize: Int = 256, maxBatchEvents: Int = 2000, maxConcurrentBatches: Int = 3) {
        self.mode = mode
        self.maxBatchSize = max(1, maxBatchSize)
        self.maxBatchEvents = max(1, maxBatchEvents)
        self.maxConcurrentBatches = max(1, maxConcurrentBatches)
    }

    /// Group commit with the defaults.
    public static let batched = GroupCommit()
    /// No batching.
    public static let direct = GroupCommit(mode: .direct)
}
