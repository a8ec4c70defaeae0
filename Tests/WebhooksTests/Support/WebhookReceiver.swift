import Foundation
import HTTPServer
import JSON
import Runtime
import Synchronization
import TestSupport
import Webhooks

/// A webhook receiver on a free loopback port: real HTTP through the project's server. It records every
/// POST (the signature header and the raw body) and answers what `answer` says for it — a status, or no
/// answer at all until the receiver stops (a receiver that hangs).
final class WebhookReceiver: Sendable {
    struct Received: Sendable {
        let signature: String?
        let body: [UInt8]
        var json: JSONValue { (try? JSONValue.parse(body)) ?? .null }
        var id: String? { json["id"]?.stringValue }
        var type: String? { json["type"]?.stringValue }
        var visitId: String? { json["visitId"]?.stringValue }
    }

    enum Answer: Sendable {
        case status(Int)
        case hang
    }

    private struct State {
        var received: [Received] = []
        var hanging: [CheckedContinuation<Void, Never>] = []
        var stopped = false
    }

    private let state = Mutex(State())
    private let server: HTTPServer
    private let task: Mutex<Task<Void, any Error>?> = Mutex(nil)
    /// What the n-th POST (from 0) gets.
    private let answer: @Sendable (_ index: Int, _ received: Received) -> Answer

    init(answer: @escaping @Sendable (_ index: Int, _ received: Received) -> Answer = { _, _ in .status(204) }) throws {
        self.answer = answer
        let box = Mutex<WebhookReceiver?>(nil)
        server = try HTTPServer(
            configuration: HTTPServerConfiguration(listenAddress: ListenAddress(host: "127.0.0.1", port: 0)),
            logger: Logger(label: "webhook-receiver"), metrics: Metrics()
        ) { request in
            guard let receiver = box.withLock({ $0 }) else { return HTTPResponse(status: 503) }
            return await receiver.handle(request)
        }
        box.withLock { $0 = self }
        let server = self.server
        task.withLock { $0 = Task { try await server.run() } }
    }

    var url: String { "http://127.0.0.1:\(server.address.port)/hooks" }

    var received: [Received] { state.withLock { $0.received } }

    private func handle(_ request: HTTPRequest) async -> HTTPResponse {
        let received = Received(signature: request.headers["LiveVisits-Signature"], body: Array(request.body))
        let index = state.withLock { s in
            s.received.append(received)
            return s.received.count - 1
        }
        switch answer(index, received) {
        case .status(let code): return HTTPResponse(status: code)
        case .hang:
            await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
                let stopped = state.withLock { s -> Bool in
                    if !s.stopped { s.hanging.append(c) }
                    return s.stopped
                }
                if stopped { c.resume() }
            }
            return HTTPResponse(status: 503)
        }
    }

    func stop() async {
        let hanging = state.withLock { s in
            s.stopped = true
            defer { s.hanging = [] }
            return s.hanging
        }
        for c in hanging { c.resume() }
        let running = task.withLock { $0 }
        running?.cancel()
        _ = try? await running?.value
    }

    /// Whether `received.signature` is right for its body under `secret` (recomputed here, not by the code
    /// under test's signing function).
    static func verify(_ received: Received, secret: String) -> Bool {
        guard let header = received.signature else { return false }
        var t: String?
        var v1: String?
        for part in header.split(separator: ",") {
            let pair = part.split(separator: "=", maxSplits: 1).map(String.init)
            guard pair.count == 2 else { return false }
            if pair[0] == "t" { t = pair[1] } else if pair[0] == "v1" { v1 = pair[1] }
        }
        guard let t, let v1 else { return false }
        let expected = WebhookSignature.hmacSHA256(key: Array(secret.utf8), message: Array("\(t).".utf8) + received.body)
        return v1 == expected.map { String(format: "%02x", $0) }.joined()
    }
}

/// Lends a receiver to `body` and stops it afterwards (also when `body` throws).
func withWebhookReceiver<Result>(
    answer: @escaping @Sendable (_ index: Int, _ received: WebhookReceiver.Received) -> WebhookReceiver.Answer = { _, _ in
        .status(204)
    },
    isolation: isolated (any Actor)? = #isolation,
    _ body: (WebhookReceiver) async throws -> Result
) async throws -> Result {
    try await withResource({ try WebhookReceiver(answer: answer) }, close: { await $0.stop() }, body)
}
