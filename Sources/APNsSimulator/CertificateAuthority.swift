import COpenSSL
import Foundation

/// Makes a throw-away certificate authority and a server certificate it signs, for 127.0.0.1 and
/// localhost, with OpenSSL: a client trusts the simulator by adding `ca.pem` (curl `--cacert`,
/// `LIVEVISITS_APNS_CA_FILE`). Keys are EC P-256; everything lives in one directory.
enum CertificateAuthority {
    static let caFileName = "ca.pem"
    static let certificateFileName = "server.pem"
    static let keyFileName = "server-key.pem"

    /// Reuses the three files in `directory` when they all exist, else generates them there
    /// (`nil`: a fresh temporary directory).
    static func identity(directory: String?, host: String) throws(SimulatorError) -> TLSFiles {
        let dir: String
        if let directory {
            dir = directory
        } else {
            dir = NSTemporaryDirectory() + "livevisits-apns-sim-" + UUID().uuidString.prefix(8).lowercased()
        }
        let files = TLSFiles(
            certificateChain: dir + "/" + certificateFileName, privateKey: dir + "/" + keyFileName,
            caFile: dir + "/" + caFileName)
        let fm = FileManager.default
        if [files.certificateChain, files.privateKey, files.caFile].allSatisfy({ fm.fileExists(atPath: $0) }) {
            return files
        }
        do {
            try fm.createDirectory(atPath: dir, withIntermediateDirectories: true)
        } catch {
            throw SimulatorError(.certificate, "cannot create the certificate directory \(dir)")
        }
        try generate(into: files, host: host)
        return files
    }

    private static func generate(into files: TLSFiles, host: String) throws(SimulatorError) {
        let caKey = try makeKey()
        defer { EVP_PKEY_free(caKey) }
        let serverKey = try makeKey()
        defer { EVP_PKEY_free(serverKey) }

        let caCert = try makeCertificate(
            commonName: "LiveVisits APNs simulator CA", key: caKey, issuer: nil, issuerKey: caKey,
            extensions: [
                (NID_basic_constraints, "critical,CA:TRUE"), (NID_key_usage, "critical,keyCertSign,cRLSign"),
                (NID_subject_key_identifier, "hash"),
            ])
        defer { X509_free(caCert) }
        var altNames = "IP:127.0.0.1,DNS:localhost"
        if host != "127.0.0.1" && host != "localhost" && !host.isEmpty {
            altNames += host.allSatisfy({ $0.isNumber || $0 == "." }) ? ",IP:\(host)" : ",DNS:\(host)"
        }
        let serverCert = try makeCertificate(
            commonName: "127.0.0.1", key: serverKey, issuer: caCert, issuerKey: caKey,
            extensions: [
                (NID_basic_constraints, "critical,CA:FALSE"), (NID_key_usage, "critical,digitalSignature"),
                (NID_ext_key_usage, "serverAuth"), (NID_subject_alt_name, altNames),
            ])
        defer { X509_free(serverCert) }

        try write(pem { PEM_write_bio_X509($0, caCert) }, to: files.caFile, secret: false)
        try write(
            pem { PEM_write_bio_X509($0, serverCert) } + pem { PEM_write_bio_X509($0, caCert) },
            to: files.certificateChain, secret: false)
        try write(pem { PEM_write_bio_PrivateKey($0, serverKey, nil, nil, 0, nil, nil) }, to: files.privateKey, secret: true)
    }

    private static func makeKey() throws(SimulatorError) -> OpaquePointer {
        guard let ctx = EVP_PKEY_CTX_new_id(EVP_PKEY_EC, nil) else {
            throw SimulatorError(.certificate, "cannot create an EC key context")
        }
        defer { EVP_PKEY_CTX_free(ctx) }
        var key: OpaquePointer?
        guard EVP_PKEY_keygen_init(ctx) == 1, EVP_PKEY_CTX_set_ec_paramgen_curve_nid(ctx, NID_X9_62_prime256v1) == 1,
            EVP_PKEY_keygen(ctx, &key) == 1, let key
        else {
            ERR_clear_error()
            throw SimulatorError(.certificate, "cannot generate a P-256 key")
        }
        return key
    }

    private static func makeCertificate(
        commonName: String, key: OpaquePointer, issuer: OpaquePointer?, issuerKey: OpaquePointer,
        extensions: [(Int32, String)]
    ) throws(SimulatorError) -> OpaquePointer {
        guard let cert = X509_new() else { throw SimulatorError(.certificate, "cannot allocate a certificate") }
        var ok = X509_set_version(cert, 2) == 1
        ok = ok && ASN1_INTEGER_set(X509_get_serialNumber(cert), Int.random(in: 1...Int.max)) == 1
        ok = ok && X509_gmtime_adj(X509_getm_notBefore(cert), -3600) != nil
        ok = ok && X509_gmtime_adj(X509_getm_notAfter(cert), 825 * 86_400) != nil
        ok = ok && X509_set_pubkey(cert, key) == 1
        if let name = X509_NAME_new() {
            ok = ok && X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, commonName, -1, -1, 0) == 1
            ok = ok && X509_set_subject_name(cert, name) == 1
            ok = ok && X509_set_issuer_name(cert, issuer.map { X509_get_subject_name($0) } ?? name) == 1
            X509_NAME_free(name)
        } else {
            ok = false
        }
        var v3 = X509V3_CTX()
        X509V3_set_ctx(&v3, issuer ?? cert, cert, nil, nil, 0)
        for (nid, value) in extensions where ok {
            guard let ext = X509V3_EXT_nconf_nid(nil, &v3, nid, value) else {
                ok = false
                break
            }
            ok = X509_add_ext(cert, ext, -1) == 1
            X509_EXTENSION_free(ext)
        }
        ok = ok && X509_sign(cert, issuerKey, EVP_sha256()) > 0
        guard ok else {
            X509_free(cert)
            ERR_clear_error()
            throw SimulatorError(.certificate, "cannot build the certificate for \(commonName)")
        }
        return cert
    }

    /// Runs a PEM writer against a memory BIO and returns the text.
    private static func pem(_ writer: (OpaquePointer) -> Int32) -> String {
        guard let bio = BIO_new(BIO_s_mem()) else { return "" }
        defer { BIO_free(bio) }
        guard writer(bio) == 1 else { return "" }
        var pointer: UnsafeMutablePointer<CChar>?
        let length = withUnsafeMutablePointer(to: &pointer) { BIO_ctrl(bio, BIO_CTRL_INFO, 0, UnsafeMutableRawPointer($0)) }
        guard length > 0, let pointer else { return "" }
        return String(decoding: UnsafeRawBufferPointer(start: pointer, count: length), as: UTF8.self)
    }

    private static func write(_ text: String, to path: String, secret: Bool) throws(SimulatorError) {
        guard !text.isEmpty,
            FileManager.default.createFile(
                atPath: path, contents: Data(text.utf8), attributes: [.posixPermissions: secret ? 0o600 : 0o644])
        else {
            throw SimulatorError(.certificate, "cannot write \(path)")
        }
    }
}
