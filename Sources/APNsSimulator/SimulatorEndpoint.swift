/// Where a running simulator can be reached.
public struct SimulatorEndpoint: Sendable, Equatable {
    /// `https://127.0.0.1:PORT` — the base URL for `LIVEVISITS_APNS_URL`.
    public var url: String
    /// The bound port.
    public var port: UInt16
    /// The CA certificate (PEM) a client must trust — for `LIVEVISITS_APNS_CA_FILE` or curl `--cacert`.
    public var caFile: String
    /// `https://127.0.0.1:PORT` of the sandbox push listener — for `LIVEVISITS_APNS_SANDBOX_URL`: like `url`,
    /// and an accepted push is answered with an `apns-unique-id`, as Apple's development environment does.
    public var sandboxURL: String = ""
    /// The sandbox push listener's port.
    public var sandboxPort: UInt16 = 0
    /// `https://127.0.0.1:PORT` of the channel-management listener — for `LIVEVISITS_APNS_CHANNELS_URL`.
    public var channelsURL: String = ""
    /// The channel-management listener's port.
    public var channelsPort: UInt16 = 0
}
