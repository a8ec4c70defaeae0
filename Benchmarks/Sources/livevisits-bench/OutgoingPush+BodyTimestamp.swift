import Outbox

extension OutgoingPush {
    /// The digits after the body's first `"timestamp":`: `aps.timestamp` in the bodies the benchmarks write
    /// themselves, which is what they match acknowledgements by; nil when there is none.
    var bodyTimestamp: Int64? {
        let key = Array("\"timestamp\":".utf8)
        guard let start = body.firstRange(of: key)?.upperBound else { return nil }
        var value: Int64 = 0
        var index = start
        while index < body.count, body[index] >= 48, body[index] <= 57 {
            value = value * 10 + Int64(body[index] - 48)
            index += 1
        }
        return value
    }
}
