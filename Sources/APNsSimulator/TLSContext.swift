import COpenSSL

/// The server's OpenSSL context: TLS 1.2+, the certificate chain and key, and ALPN that selects
/// only `h2` (as APNs does).
///
/// Configured once in `init`; afterwards only `SSL_new` reads it, which OpenSSL allows from any thread.
final class TLSContext: @unchecked Sendable {  // immutable after init (OpenSSL locks SSL_CTX internally)
    let context: OpaquePointer

    init(files: TLSFiles) throws(SimulatorError) {
        guard let ctx = SSL_CTX_new(TLS_server_method()) else {
            throw SimulatorError(.tls, "cannot create the TLS context")
        }
        var ok = copenssl_ctx_set_min_proto_version(ctx, TLS1_2_VERSION) == 1
        ok = ok && SSL_CTX_use_certificate_chain_file(ctx, files.certificateChain) == 1
        ok = ok && SSL_CTX_use_PrivateKey_file(ctx, files.privateKey, SSL_FILETYPE_PEM) == 1
        ok = ok && SSL_CTX_check_private_key(ctx) == 1
        guard ok else {
            SSL_CTX_free(ctx)
            ERR_clear_error()
            throw SimulatorError(
                .certificate, "cannot use the certificate \(files.certificateChain) with the key \(files.privateKey)")
        }
        _ = SSL_CTX_ctrl(
            ctx, SSL_CTRL_MODE, Int(SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER), nil)
        SSL_CTX_set_alpn_select_cb(ctx, TLSContext.selectH2, nil)
        context = ctx
    }

    deinit { SSL_CTX_free(context) }

    /// ALPN: pick `h2` from the client's list, or negotiate nothing.
    private static let selectH2: SSL_CTX_alpn_select_cb_func = { _, out, outLength, input, inputLength, _ in
        guard let out, let outLength, let input else { return SSL_TLSEXT_ERR_NOACK }
        var i = 0
        let total = Int(inputLength)
        while i < total {
            let length = Int(input[i])
            if length == 2, i + 2 < total, input[i + 1] == UInt8(ascii: "h"), input[i + 2] == UInt8(ascii: "2") {
                out.pointee = input + i + 1
                outLength.pointee = 2
                return SSL_TLSEXT_ERR_OK
            }
            i += 1 + length
        }
        return SSL_TLSEXT_ERR_NOACK
    }
}
