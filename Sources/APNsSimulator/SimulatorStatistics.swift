/// Counters the tests and the demo read.
public struct SimulatorStatistics: Sendable, Equatable {
    /// TLS connections accepted so far.
    public var connectionsAccepted: Int
    /// Connections open now.
    public var connectionsOpen: Int
    /// The most requests one connection had open at once (proves multiplexing).
    public var maximumConcurrentStreams: Int
    /// Push requests recorded since start (not cleared by `reset`).
    public var requestsTotal: Int
}
