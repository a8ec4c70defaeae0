import Foundation

/// Prometheus metrics for one process: counters, gauges and histograms keyed by name and labels,
/// plus collectors asked at scrape time (for values that live in the database, such as outbox depth).
/// Names carry their unit (`_seconds`, `_total`).
public final class Metrics: Sendable {
    /// The process-wide registry the services report to.
    public static let shared = Metrics()

    public typealias Labels = [String: String]

    private struct Family {
        var help: String
        var type: String
        var series: [String: Double] = [:]  // rendered label set -> value
        var histograms: [String: Histogram] = [:]
    }

    private struct Histogram {
        var buckets: [Double]
        var counts: [UInt64]
        var sum: Double = 0
        var count: UInt64 = 0

        mutating func add(_ value: Double) {
            for (i, bound) in buckets.enumerated() where value <= bound { counts[i] += 1 }
            sum += value
            count += 1
        }
    }

    public static let defaultLatencyBuckets: [Double] = [
        0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10,
    ]

    private let families = Lock<[String: Family]>([:])
    private let collectors = Lock<[@Sendable () async -> String]>([])

    public init() {}

    public func increment(_ name: String, help: String, labels: Labels = [:], by value: Double = 1) {
        let key = Metrics.render(labels)
        families.withLock { f in
            // In place: a copy of the family out of the dictionary and back copied its series each time.
            f[name, default: Family(help: help, type: "counter")].series[key, default: 0] += value
        }
    }

    public func set(_ name: String, help: String, labels: Labels = [:], to value: Double) {
        let key = Metrics.render(labels)
        families.withLock { f in f[name, default: Family(help: help, type: "gauge")].series[key] = value }
    }

    public func observe(
        _ name: String, help: String, labels: Labels = [:], value: Double,
        buckets: [Double] = Metrics.defaultLatencyBuckets
    ) {
        let key = Metrics.render(labels)
        families.withLock { f in
            f[name, default: Family(help: help, type: "histogram")].histograms[
                key, default: Histogram(buckets: buckets, counts: Array(repeating: 0, count: buckets.count))
            ].add(value)
        }
    }

    /// The current value of one series (tests and the demo read these).
    public func value(_ name: String, labels: Labels = [:]) -> Double? {
        let key = Metrics.render(labels)
        return families.withLock { f in
            if let v = f[name]?.series[key] { return v }
            if let h = f[name]?.histograms[key] { return Double(h.count) }
            return nil
        }
    }

    /// Adds text produced at scrape time (already in exposition format).
    public func addCollector(_ collector: @escaping @Sendable () async -> String) {
        collectors.withLock { $0.append(collector) }
    }

    /// The whole registry in Prometheus text format 0.0.4.
    public func render() async -> String {
        var out = families.withLock { f -> String in
            var text = ""
            for name in f.keys.sorted() {
                let family = f[name]!
                text += "# HELP \(name) \(family.help)\n# TYPE \(name) \(family.type)\n"
                for key in family.series.keys.sorted() {
                    text += "\(name)\(key) \(Metrics.format(family.series[key]!))\n"
                }
                for key in family.histograms.keys.sorted() {
                    let h = family.histograms[key]!
                    let inner = key.isEmpty ? "" : String(key.dropFirst().dropLast()) + ","
                    for (i, bound) in h.buckets.enumerated() {
                        text += "\(name)_bucket{\(inner)le=\"\(Metrics.format(bound))\"} \(h.counts[i])\n"
                    }
                    text += "\(name)_bucket{\(inner)le=\"+Inf\"} \(h.count)\n"
                    text += "\(name)_sum\(key) \(Metrics.format(h.sum))\n"
                    text += "\(name)_count\(key) \(h.count)\n"
                }
            }
            return text
        }
        for collector in collectors.withLock({ $0 }) {
            out += await collector()
        }
        return out
    }

    /// `{a="1",b="2"}` with label values escaped, or "" for no labels.
    public static func render(_ labels: Labels) -> String {
        guard !labels.isEmpty else { return "" }
        let parts = labels.keys.sorted().map { key -> String in
            let raw = labels[key]!
            // Most values need no escaping; Foundation's replacing is the cost of a hot counter otherwise.
            guard raw.utf8.contains(where: { $0 == 92 || $0 == 34 || $0 == 10 }) else { return "\(key)=\"\(raw)\"" }
            let v = raw.replacingOccurrences(of: "\\", with: "\\\\")
                .replacingOccurrences(of: "\"", with: "\\\"")
                .replacingOccurrences(of: "\n", with: "\\n")
            return "\(key)=\"\(v)\""
        }
        return "{" + parts.joined(separator: ",") + "}"
    }

    public static func format(_ v: Double) -> String {
        if v == v.rounded(), abs(v) < 1e15 { return String(Int64(v)) }
        return String(v)
    }
}
