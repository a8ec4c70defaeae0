/// A `/metrics` answer (Prometheus text format) read as values by series: the name, with its labels when it
/// has any (`livevisits_outbox_claims_total{found="none"}`). Comment lines, and anything else that is not a
/// series and a number (an HTTP head read with the body), are skipped.
enum MetricsText {
    static func values(_ text: String) -> [String: Double] {
        var values: [String: Double] = [:]
        for line in text.split(separator: "\n") {
            let parts = line.split(separator: " ")
            if parts.count == 2, let value = Double(parts[1]) { values[String(parts[0])] = value }
        }
        return values
    }
}
