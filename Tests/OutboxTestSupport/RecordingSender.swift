import Foundation
import Outbox
import Synchronization
import TestSupport

/// A `PushSender` for worker tests: records every request, answers by a script, and notices when two
/// pushes to one token are in flight at once.
public final class RecordingSender: PushSender {
    /// What the scripted APNs answers.
    public enum Answer: Sendable {
        case ok
        /// `status` nil: no answer (a timeout). A dead token's retirement reason follows from `reason`.
        case fail(Int?, String, Verdict, timestamp: Int64? = nil)
    }
    /// The failure's class as the script names it.
    public enum Verdict: Sendable {
        case retryable, tokenDead, configuration, permanent
    }
    public struct Call: Sendable {
        public let request: OutgoingPush
        public let startedAt: Double
        public let outcome: PushOutcome
        /// `aps.event` of the body.
        public var kind: String? { event(of: request.body) }
    }
    private struct State {
        var calls: [Call] = []
        var inFlight: [String: Int] = [:]
        var overlaps = 0
        var started = 0
    }
    private let state = Mutex(State())
    private let delaySeconds: Double
    private let gate: Gate?
    private let respond: @Sendable (OutgoingPush, Int) -> Answer

    /// - Parameters:
    ///   - gate: when given, every send waits at it (after it counts as started) until the test opens it.
    ///   - respond: the outcome of the n-th send (0-based, in start order).
    public init(
        delaySeconds: Double = 0, gate: Gate? = nil,
        respond: @escaping @Sendable (OutgoingPush, Int) -> Answer = { _, _ in .ok }
    ) {
        self.delaySeconds = delaySeconds
        self.gate = gate
        self.respond = respond
    }

    public func send(_ request: OutgoingPush) async -> PushOutcome {
        let startedAt = Date().timeIntervalSince1970
        let index = state.withLock { s -> Int in
            s.inFlight[request.deviceToken, default: 0] += 1
            if s.inFlight[request.deviceToken]! > 1 { s.overlaps += 1 }
            s.started += 1
            return s.started - 1
        }
        if let gate { await gate.wait() }
        // APNs's time to answer (the external party this sender stands in for), not a wait for the worker.
        if delaySeconds > 0 { try? await Task.sleep(nanoseconds: UInt64(delaySeconds * 1e9)) }
        let outcome: PushOutcome
        switch respond(request, index) {
        case .ok: outcome = .accepted(latency: 0.001)
        case .fail(let status, let reason, let verdict, let timestamp):
            let classification: PushFailure.Class
            switch verdict {
            case .retryable: classification = .retryable
            case .configuration: classification = .configuration
            case .permanent: classification = .permanent
            case .tokenDead:
                classification = .tokenDead(
                    reason == "BadDeviceToken"
                        ? .badDeviceToken : reason == "DeviceTokenNotForTopic" ? .notForTopic : .unregistered)
            }
            outcome = .failed(
                PushFailure(
                    classification: classification, status: status, reason: reason,
                    tokenInvalidSinceMs: status == 410 ? timestamp : nil,
                    outcomeUnknown: status == nil, latency: 0.001))
        }
        state.withLock { s in
            s.inFlight[request.deviceToken, default: 1] -= 1
            s.calls.append(Call(request: request, startedAt: startedAt, outcome: outcome))
        }
        return outcome
    }

    public var calls: [Call] { state.withLock { $0.calls } }
    /// Sends started, answered or not.
    public var started: Int { state.withLock { $0.started } }
    public var accepted: [Call] { calls.filter { if case .accepted = $0.outcome { true } else { false } } }
    /// Times a second push to a token started while one was in flight.
    public var overlaps: Int { state.withLock { $0.overlaps } }
}

/// The `aps.timestamp` of a body the tests built.
public func apsTimestamp(of body: [UInt8]) -> Int64? {
    guard let object = try? JSONSerialization.jsonObject(with: Data(body)) as? [String: Any],
        let aps = object["aps"] as? [String: Any], let ts = aps["timestamp"] as? NSNumber
    else { return nil }
    return ts.int64Value
}

/// The `aps.event` of a body.
public func event(of body: [UInt8]) -> String? {
    guard let object = try? JSONSerialization.jsonObject(with: Data(body)) as? [String: Any],
        let aps = object["aps"] as? [String: Any]
    else { return nil }
    return aps["event"] as? String
}
