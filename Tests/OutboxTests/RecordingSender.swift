import Foundation
import Outbox
import Synchronization

/// A `PushSender` for worker tests: records every request, answers by a script, and notices when two
/// pushes to one token are in flight at once.
final class RecordingSender: PushSender {
    struct Call: Sendable {
        let request: PushRequest
        let startedAt: Double
        let outcome: PushOutcome
    }
    private struct State {
        var calls: [Call] = []
        var inFlight: [String: Int] = [:]
        var overlaps = 0
        var started = 0
    }
    private let state = Mutex(State())
    private let delaySeconds: Double
    private let respond: @Sendable (PushRequest, Int) -> PushOutcome

    /// - Parameter respond: the outcome of the n-th send (0-based, in start order).
    init(delaySeconds: Double = 0, respond: @escaping @Sendable (PushRequest, Int) -> PushOutcome = { _, _ in .accepted(latency: 0.001) }) {
        self.delaySeconds = delaySeconds
        self.respond = respond
    }

    func send(_ request: PushRequest) async -> PushOutcome {
        let startedAt = Date().timeIntervalSince1970
        let index = state.withLock { s -> Int in
            s.inFlight[request.deviceToken, default: 0] += 1
            if s.inFlight[request.deviceToken]! > 1 { s.overlaps += 1 }
            s.started += 1
            return s.started - 1
        }
        if delaySeconds > 0 { try? await Task.sleep(nanoseconds: UInt64(delaySeconds * 1e9)) }
        let outcome = respond(request, index)
        state.withLock { s in
            s.inFlight[request.deviceToken, default: 1] -= 1
            s.calls.append(Call(request: request, startedAt: startedAt, outcome: outcome))
        }
        return outcome
    }

    var calls: [Call] { state.withLock { $0.calls } }
    var accepted: [Call] { calls.filter { if case .accepted = $0.outcome { true } else { false } } }
    /// Times a second push to a token started while one was in flight.
    var overlaps: Int { state.withLock { $0.overlaps } }

    static func failure(_ status: Int?, _ reason: String, _ classification: PushFailure.Classification, timestamp: Int64? = nil) -> PushOutcome {
        .failed(PushFailure(status: status, reason: reason, timestamp: timestamp, latency: 0.001, classification: classification))
    }
}

/// The `aps.timestamp` of a body the tests built.
func apsTimestamp(of body: [UInt8]) -> Int64? {
    guard let object = try? JSONSerialization.jsonObject(with: Data(body)) as? [String: Any],
        let aps = object["aps"] as? [String: Any], let ts = aps["timestamp"] as? NSNumber
    else { return nil }
    return ts.int64Value
}
