/// Where a running simulator can be reached.
public struct SimulatorEndpoint: Sendable, Equatable {
    /// `https://127.0.0.1:PORT` — the base URL for `LIVEVISITS_APNS_URL`.
    public var url: String
    /// The bound port.
    public var port: UInt16
    /// The CA certificate (PEM) a client must trust — for `LIVEVISITS_APNS_CA_FILE` or curl `--cacert`.
    public var caFile: String
}
