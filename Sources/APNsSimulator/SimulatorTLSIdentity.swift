/// Where the simulator's TLS identity comes from.
public enum SimulatorTLSIdentity: Sendable {
    /// Reuse `ca.pem`, `server.pem` and `server-key.pem` from `directory` when all three exist,
    /// otherwise generate a fresh CA and a server certificate for 127.0.0.1/localhost there
    /// (`nil`: a new temporary directory).
    case generate(directory: String?)
    /// Existing PEM files: the server's certificate chain, its private key, and the CA a client should trust.
    case files(certificateChain: String, privateKey: String, caFile: String)
}
