import COpenSSL
import Foundation

/// Extra CA certificates (`LIVEVISITS_APNS_CA_FILE`, the simulator's) trusted in addition to the
/// system store: they are added to the transport's TLS context after the system's default paths, so
/// that neither replaces the other.
public final class APNsTrustedCertificates: Sendable {
    // X509 objects are immutable after load and only read (X509_STORE_add_cert takes its own
    // reference); freed in deinit.
    nonisolated(unsafe) private let certificates: [OpaquePointer]
    /// How many certificates the file held.
    public var count: Int { certificates.count }

    /// Reads every PEM certificate in `pem`; errors name `variable`.
    public init(pem: [UInt8], variable: String = "LIVEVISITS_APNS_CA_FILE") throws(APNsError) {
        var loaded: [OpaquePointer] = []
        pem.withUnsafeBytes { raw in
            guard let bio = BIO_new_mem_buf(raw.baseAddress, Int32(raw.count)) else { return }
            defer { BIO_free(bio) }
            while let certificate = PEM_read_bio_X509(bio, nil, nil, nil) { loaded.append(certificate) }
        }
        ERR_clear_error()  // the loop ends on "no start line"
        guard !loaded.isEmpty else {
            throw APNsError(
                code: .invalidCAFile, message: "\(variable) holds no PEM certificate", variable: variable)
        }
        certificates = loaded
    }

    /// Reads the certificates from a file.
    public convenience init(contentsOfFile path: String, variable: String = "LIVEVISITS_APNS_CA_FILE")
        throws(APNsError)
    {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw APNsError(
                code: .caFileUnreadable, message: "\(variable) names a file that cannot be read: \(path)",
                variable: variable)
        }
        try self.init(pem: [UInt8](data), variable: variable)
    }

    deinit { for certificate in certificates { X509_free(certificate) } }

    /// Adds the certificates to an OpenSSL `SSL_CTX`'s trust store.
    func install(into context: OpaquePointer) {
        guard let store = SSL_CTX_get_cert_store(context) else { return }
        for certificate in certificates {
            _ = X509_STORE_add_cert(store, certificate)  // fails harmlessly when already present
        }
        ERR_clear_error()
    }
}
