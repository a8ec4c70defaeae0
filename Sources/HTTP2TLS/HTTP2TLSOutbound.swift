import CNGHTTP2
import COpenSSL

#if canImport(Glibc)
    import Glibc
#endif

/// What an nghttp2 session has to send, gathered into one buffer and written over a non-blocking OpenSSL
/// connection with as few `SSL_write`s as the socket takes: a pass that submitted many frames costs a few TLS
/// records, not a write each. Shared by the APNs client's connections and the simulator's.
public struct HTTP2TLSOutbound {
    private var bytes: [UInt8] = []
    private var offset = 0

    public init() {}

    /// Bytes gathered and not yet taken by the socket (the connection should poll for writability).
    public var isPending: Bool { offset < bytes.count }

    /// Why a flush failed: nghttp2's error, or the TLS connection's (OpenSSL's error queue is cleared).
    public enum Failure: Error, CustomStringConvertible {
        case http2(String)
        case tls(String)

        public var description: String {
            switch self {
            case .http2(let message): "HTTP/2: \(message)"
            case .tls(let message): "TLS: \(message)"
            }
        }
    }

    /// Moves nghttp2's output into the buffer (unless `gather` is false: a connection closing at once sends
    /// nothing new), at most 256 kB ahead of the socket, then writes what the socket takes.
    public mutating func flush(session: OpaquePointer, ssl: OpaquePointer, gather: Bool = true) -> Result<Void, Failure> {
        while gather && bytes.count - offset < 256 * 1024 {
            var data: UnsafePointer<UInt8>?
            let n = nghttp2_session_mem_send(session, &data)
            if n < 0 { return .failure(.http2(String(cString: nghttp2_strerror(Int32(n))))) }
            guard n > 0, let data else { break }
            bytes.append(contentsOf: UnsafeBufferPointer(start: data, count: n))
        }
        while offset < bytes.count {
            let n = bytes.withUnsafeBytes { raw in
                SSL_write(ssl, raw.baseAddress! + offset, Int32(min(raw.count - offset, 1 << 20)))
            }
            if n > 0 {
                offset += Int(n)
                continue
            }
            switch SSL_get_error(ssl, n) {
            case SSL_ERROR_WANT_WRITE, SSL_ERROR_WANT_READ: return .success(())
            default: return .failure(.tls(takeOpenSSLError()))
            }
        }
        bytes.removeAll(keepingCapacity: bytes.capacity <= 1 << 20)
        offset = 0
        return .success(())
    }
}

/// The first error on OpenSSL's queue as text (the queue cleared), or the socket's errno.
public func takeOpenSSLError() -> String {
    let code = ERR_get_error()
    ERR_clear_error()
    guard code != 0 else { return errno == 0 ? "end of stream" : String(cString: strerror(errno)) }
    var buffer = [CChar](repeating: 0, count: 256)
    ERR_error_string_n(code, &buffer, buffer.count)
    return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
}
