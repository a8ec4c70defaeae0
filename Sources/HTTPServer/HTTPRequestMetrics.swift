import Runtime

/// `livevisits_http_requests_total{route,method,status}` and the `livevisits_http_request_seconds`
/// histogram by route, counted here and written into a Runtime `Metrics` registry at scrape time
/// (as one of its collectors).
///
/// Why not `Metrics.increment`/`observe` per request: those render and escape the label set on every
/// call, which cost a quarter of an MHD thread's time under load. Here a request costs one lock and
/// a dictionary update; labels are rendered only when `/metrics` is read.
final class HTTPRequestMetrics: Sendable {
    static let requestsName = "livevisits_http_requests_total"
    static let secondsName = "livevisits_http_request_seconds"

    private struct Series: Hashable {
        let route: String
        let method: String
        let status: String
    }

    private struct Histogram {
        var counts: [UInt64]
        var sum: Double = 0
        var count: UInt64 = 0

        mutating func add(_ seconds: Double, buckets: [Double]) {
            for (index, bound) in buckets.enumerated() where seconds <= bound { counts[index] += 1 }
            sum += seconds
            count += 1
        }
    }

    private struct State {
        var requests: [Series: UInt64] = [:]
        var latency: [String: Histogram] = [:]
    }

    private let buckets = Metrics.defaultLatencyBuckets
    private let state = Lock(State())

    /// Registers with `registry` so that its `render()` includes these series.
    init(registry: Metrics) {
        registry.addCollector { [weak self] in self?.render() ?? "" }
    }

    /// Counts one finished request.
    func record(route: String, method: String, status: String, seconds: Double) {
        let series = Series(route: route, method: method, status: status)
        let buckets = self.buckets
        state.withLock { s in
            s.requests[series, default: 0] += 1
            // In place: a histogram taken out and put back copied its counts at every request.
            s.latency[route, default: Histogram(counts: Array(repeating: 0, count: buckets.count))].add(
                seconds, buckets: buckets)
        }
    }

    /// Requests counted for one series (tests and the demo).
    func count(route: String, method: String, status: String) -> UInt64 {
        state.withLock { $0.requests[Series(route: route, method: method, status: status)] ?? 0 }
    }

    /// Prometheus text format 0.0.4 for both families (empty before the first request).
    func render() -> String {
        let (requests, latency) = state.withLock { ($0.requests, $0.latency) }
        guard !requests.isEmpty else { return "" }
        var text = "# HELP \(Self.requestsName) HTTP requests answered, by route template, method and status.\n"
        text += "# TYPE \(Self.requestsName) counter\n"
        let lines = requests.map { series, value in
            let labels = Metrics.render(["route": series.route, "method": series.method, "status": series.status])
            return "\(Self.requestsName)\(labels) \(value)\n"
        }
        text += lines.sorted().joined()
        text += "# HELP \(Self.secondsName) Time from request headers to the response sent, by route template.\n"
        text += "# TYPE \(Self.secondsName) histogram\n"
        for route in latency.keys.sorted() {
            let histogram = latency[route]!
            let labels = Metrics.render(["route": route])
            let inner = String(labels.dropFirst().dropLast()) + ","
            for (index, bound) in buckets.enumerated() {
                text += "\(Self.secondsName)_bucket{\(inner)le=\"\(Metrics.format(bound))\"} \(histogram.counts[index])\n"
            }
            text += "\(Self.secondsName)_bucket{\(inner)le=\"+Inf\"} \(histogram.count)\n"
            text += "\(Self.secondsName)_sum\(labels) \(Metrics.format(histogram.sum))\n"
            text += "\(Self.secondsName)_count\(labels) \(histogram.count)\n"
        }
        return text
    }
}
