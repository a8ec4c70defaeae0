import Outbox

/// Where webhooks go and how they are sent. The defaults follow the product's promises; tests shorten them.
public struct WebhookConfiguration: Sendable {
    /// The receiver (`LIVEVISITS_WEBHOOK_URL`, http or https).
    public var url: String
    /// The signing secret (`LIVEVISITS_WEBHOOK_SECRET`).
    public var secret: String
    /// Retry backoff after anything but a 2xx: the outbox's (full jitter, 1 s base, 5 min cap).
    public var backoff: Backoff = Backoff()
    /// A webhook still failing this long after it was written goes to `dead`.
    public var maximumAgeSeconds: Double = 24 * 3600
    /// How long one POST may take, connecting included, before it counts as failed (and is retried).
    public var requestTimeoutSeconds: Double = 10
    /// Webhooks claimed per round trip.
    public var batchSize: Int = 500
    /// Claim loops: while one batch is on the wire the next is claimed and sent.
    public var concurrentBatches: Int = 2
    /// Connections to the receiver at most (kept alive between POSTs).
    public var maximumConnections: Int = 64
    /// How long a claim holds before another worker may take the webhook (longer than a request may take).
    public var leaseSeconds: Double = 60
    /// While the pushes have a backlog (`WebhookWorker`'s `pushesBacklogged`), one loop claims at most
    /// `yieldBatchSize` webhooks every `yieldSeconds`: the Lock Screen first, the dispatch system right after.
    public var yieldSeconds: Double = 0.5
    public var yieldBatchSize: Int = 100
    /// Under a trickle of webhooks (the last claim was not full), the loops' claims start at least this far
    /// apart: a claim costs PostgreSQL about as much whatever it takes (it reads the open webhooks of every
    /// visit), and every commit wakes the loops, so one claim then serves what many commits wrote. A backlog
    /// (a full claim) is claimed again at once. 0: claim as soon as woken.
    public var claimGatherSeconds: Double = 0.1
    /// Longest idle wait for new webhooks (they are written by triggers, without a NOTIFY of their own).
    public var pollIntervalSeconds: Double = 0.2

    public init(url: String, secret: String) {
        self.url = url
        self.secret = secret
    }

    /// The webhook settings from the environment: nil when neither variable is set; a `WebhookConfigurationError`
    /// naming the variable when only one is, or when the URL is not an absolute http(s) URL with a host.
    public static func fromEnvironment(_ environment: [String: String]) throws(WebhookConfigurationError)
        -> WebhookConfiguration?
    {
        let url = environment["LIVEVISITS_WEBHOOK_URL"].flatMap { $0.isEmpty ? nil : $0 }
        let secret = environment["LIVEVISITS_WEBHOOK_SECRET"].flatMap { $0.isEmpty ? nil : $0 }
        switch (url, secret) {
        case (nil, nil): return nil
        case (nil, _?):
            throw WebhookConfigurationError(
                "LIVEVISITS_WEBHOOK_URL is not set, but LIVEVISITS_WEBHOOK_SECRET is (webhooks need both)")
        case (_?, nil):
            throw WebhookConfigurationError(
                "LIVEVISITS_WEBHOOK_SECRET is not set, but LIVEVISITS_WEBHOOK_URL is (webhooks need both)")
        case (let url?, let secret?):
            guard isHTTPURL(url) else {
                throw WebhookConfigurationError(
                    "LIVEVISITS_WEBHOOK_URL must be an http:// or https:// URL with a host (\(described(url)))")
            }
            return WebhookConfiguration(url: url, secret: secret)
        }
    }

    /// An absolute `http` or `https` URL with a host and no spaces or control characters.
    static func isHTTPURL(_ text: String) -> Bool {
        let lower = text.lowercased()
        let rest: Substring
        if lower.hasPrefix("http://") {
            rest = text.dropFirst(7)
        } else if lower.hasPrefix("https://") {
            rest = text.dropFirst(8)
        } else {
            return false
        }
        guard !text.unicodeScalars.contains(where: { $0.value <= 0x20 || $0.value == 0x7F }) else { return false }
        let authority = rest.prefix { $0 != "/" && $0 != "?" && $0 != "#" }
        let host = authority.split(separator: "@", omittingEmptySubsequences: false).last ?? ""
        return !host.isEmpty && !host.hasPrefix(":")
    }

    /// What is wrong with a refused URL, without repeating it (it may carry credentials or a token).
    static func described(_ text: String) -> String {
        guard let range = text.range(of: "://") else { return "no scheme" }
        let scheme = text[..<range.lowerBound].lowercased()
        guard scheme == "http" || scheme == "https" else {
            let shown = scheme.count <= 10 && scheme.allSatisfy { $0.isLetter || $0.isNumber || "+-.".contains($0) }
            return shown ? "scheme \(scheme)" : "an unknown scheme"
        }
        return "no host, or spaces or control characters"
    }
}

/// A webhook setting that cannot be used: the message names the variable.
public struct WebhookConfigurationError: Error, CustomStringConvertible {
    public let message: String
    init(_ message: String) { self.message = message }
    public var description: String { message }
}
