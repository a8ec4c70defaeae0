/// The PEM files the simulator serves TLS with.
struct TLSFiles: Sendable, Equatable {
    var certificateChain: String
    var privateKey: String
    var caFile: String
}
