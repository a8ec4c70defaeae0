/// The limits and knobs of one `HTTPServer`. Defaults suit the public API of the contract.
public struct HTTPServerConfiguration: Sendable {
    /// Where to listen (`127.0.0.1:8080` by default; port 0 picks a free port).
    public var listenAddress: ListenAddress
    /// Largest request body accepted; a larger one is answered 413 `payload_too_large`
    /// (at once when `Content-Length` says so, without reading the body). Default 64 KiB.
    public var maxBodyBytes: Int
    /// Per-connection memory for the request line, the headers and the I/O buffers
    /// (libmicrohttpd's `MHD_OPTION_CONNECTION_MEMORY_LIMIT`). Larger headers are answered 431 by
    /// libmicrohttpd. Default 32 KiB.
    public var maxHeaderBytes: Int
    /// Most connections open at once (`MHD_OPTION_CONNECTION_LIMIT`); at the limit, new connections
    /// wait in the listen backlog until one closes. Default 1024.
    public var connectionLimit: Int
    /// Most connections open at once from one IP address; one more is accepted and closed at once. 0 means no
    /// per-address limit. Default 128.
    public var perAddressConnectionLimit: Int
    /// Seconds a connection may stay silent (a slow reader of an answer, a half-open peer) before it
    /// is closed. Default 15.
    public var idleTimeoutSeconds: Int
    /// Seconds a request may take to arrive whole, headers and body, however slowly it trickles:
    /// counted from the connection's opening for its first request, and from the previous answer's
    /// end for the next one on a kept-alive connection (so an idle kept-alive connection is closed
    /// after this long too). Past it the connection is closed without an answer. Default 10.
    public var requestReceiveTimeout: Double
    /// Seconds a handler may take; after that the client gets 503 `timeout` and the handler's task
    /// is cancelled. Default 10.
    public var requestTimeout: Double
    /// Seconds that in-flight requests get to finish after shutdown begins. Default 10.
    public var shutdownGracePeriod: Double
    /// Whether connections stay open between requests (HTTP/1.1 keep-alive). Default true.
    public var keepAlive: Bool
    /// libmicrohttpd polling threads (epoll each). Default 2 (`serve` sets its own, `LIVEVISITS_HTTP_THREADS`).
    public var threadCount: Int
    /// Paths whose requests may be held long (a long poll): a connection whose first request is a `GET` of a
    /// path starting with one of these is served by `threadCount` threads of its own. libmicrohttpd walks all of
    /// a thread's suspended connections whenever one resumes, so thousands of held requests would make every
    /// other request that waits cost that walk. Default none (one set of threads).
    public var holdingPathPrefixes: [String]
    /// Whether a well-formed `X-Request-Id` from the client (a proxy) is adopted instead of generating one.
    public var acceptsClientRequestID: Bool
    /// libmicrohttpd's `MHD_USE_TURBO`: opportunistic reads and writes, and no `shutdown()` before
    /// close. Faster, but without the `shutdown()` a response followed by a
    /// close can be lost before the client reads it, so it stays off. Default false.
    public var turbo: Bool

    /// The defaults of the contract's public API; change what you need.
    public init(
        listenAddress: ListenAddress = ListenAddress(host: "127.0.0.1", port: 8080),
        maxBodyBytes: Int = 64 * 1024,
        maxHeaderBytes: Int = 32 * 1024,
        connectionLimit: Int = 1024,
        perAddressConnectionLimit: Int = 128,
        idleTimeoutSeconds: Int = 15,
        requestReceiveTimeout: Double = 10,
        requestTimeout: Double = 10,
        shutdownGracePeriod: Double = 10,
        keepAlive: Bool = true,
        threadCount: Int = 2,
        holdingPathPrefixes: [String] = [],
        acceptsClientRequestID: Bool = true,
        turbo: Bool = false
    ) {
        self.holdingPathPrefixes = holdingPathPrefixes
        self.listenAddress = listenAddress
        self.maxBodyBytes = maxBodyBytes
        self.maxHeaderBytes = maxHeaderBytes
        self.connectionLimit = connectionLimit
        self.perAddressConnectionLimit = perAddressConnectionLimit
        self.idleTimeoutSeconds = idleTimeoutSeconds
        self.requestReceiveTimeout = requestReceiveTimeout
        self.requestTimeout = requestTimeout
        self.shutdownGracePeriod = shutdownGracePeriod
        self.keepAlive = keepAlive
        self.threadCount = threadCount
        self.acceptsClientRequestID = acceptsClientRequestID
        self.turbo = turbo
    }

    /// The defaults, listening where `LIVEVISITS_HTTP_ADDR` says (contract §3; `127.0.0.1:8080` when unset).
    public init(environment: [String: String]) throws(HTTPServerError) {
        self.init()
        if let text = environment["LIVEVISITS_HTTP_ADDR"], !text.isEmpty {
            listenAddress = try ListenAddress(parsing: text)
        }
    }

    /// Checks the ranges libmicrohttpd accepts.
    func validate() throws(HTTPServerError) {
        func fail(_ message: String) -> HTTPServerError {
            HTTPServerError(code: .invalidConfiguration, message: message)
        }
        guard maxBodyBytes >= 0 else { throw fail("maxBodyBytes must not be negative") }
        guard maxHeaderBytes >= 4096 else { throw fail("maxHeaderBytes must be at least 4096") }
        guard connectionLimit >= 1, connectionLimit <= Int(Int32.max) else { throw fail("connectionLimit must be at least 1") }
        guard perAddressConnectionLimit >= 0 else { throw fail("perAddressConnectionLimit must not be negative") }
        guard idleTimeoutSeconds >= 0, idleTimeoutSeconds <= 86_400 else { throw fail("idleTimeoutSeconds out of range") }
        guard requestReceiveTimeout > 0, requestTimeout > 0, shutdownGracePeriod >= 0 else {
            throw fail("timeouts must be positive")
        }
        guard threadCount >= 1, threadCount <= 256 else { throw fail("threadCount must be 1…256") }
        for prefix in holdingPathPrefixes {
            guard prefix.hasPrefix("/"), prefix.utf8.count <= 256, !prefix.contains(where: { $0 == " " || $0.isNewline }) else {
                throw fail("holdingPathPrefixes: \(prefix.debugDescription) is not the start of a path")
            }
        }
    }
}
