import Foundation
import Outbox
import PersonalData
import Runtime
import TestSupport
import Testing
import Webhooks

/// The receiver Docs/operations.md shows (`webhook_receiver.py`), run as printed against the webhook sender:
/// it accepts what LiveVisits signs, drops a repeated id, and refuses a wrong signature.
@Suite(.timeLimit(.minutes(2))) struct ReceiverSnippetTests {
    /// The Python block that follows the receiver's name in the runbook.
    static func snippet() throws -> String {
        let text = try String(
            contentsOf: TestDatabase.repositoryRoot.appendingPathComponent("Docs/operations.md"), encoding: .utf8)
        let after = try #require(text.range(of: "`webhook_receiver.py`:"))
        let rest = text[after.upperBound...]
        let start = try #require(rest.range(of: "```python\n"))
        let end = try #require(rest[start.upperBound...].range(of: "```"))
        return String(rest[start.upperBound..<end.lowerBound])
    }

    @Test func theRunbooksReceiverVerifiesWhatTheSenderSigns() async throws {
        let python = try requireTool("/usr/bin/python3", installedBy: "python3")
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("lv-hook-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let script = directory.appendingPathComponent("webhook_receiver.py").path
        try Self.snippet().write(toFile: script, atomically: true, encoding: .utf8)
        let port = try #require(LoopbackPort.bindable())
        var environment = ProcessInfo.processInfo.environment
        environment["LIVEVISITS_WEBHOOK_SECRET"] = WebhookWorld.secret
        let printed = directory.appendingPathComponent("stdout").path
        let child = try ChildProcess(python, [script, String(port)], environment: environment).start(
            stdout: .file(printed))
        defer { child.signal(SIGKILL) }
        let url = "http://127.0.0.1:\(port)/hooks"
        let transport = CurlWebhookTransport(maximumConnections: 2)
        // Wait for it to listen: a badly signed POST is answered 400 once it does.
        try await eventually("the receiver listens", within: 30) {
            await transport.post(WebhookRequest(url: url, headers: [], body: Array("{}".utf8), timeoutSeconds: 5))
                == .status(400)
        }
        let body = Array(#"{"id":"x","type":"visit.event","visitId":"v","occurredAt":0,"data":null}"#.utf8)
        let wrong = WebhookSignature.header(secret: "not the secret", timestamp: Int64(Date().timeIntervalSince1970), body: body)
        #expect(
            await transport.post(
                WebhookRequest(
                    url: url, headers: [(WebhookSignature.headerName, wrong)], body: body, timeoutSeconds: 5))
                == .status(400))
        try await withTestDatabase { _, pool in
            try await WebhookStore(pool: pool).setEnabled(true)
            var configuration = fastWebhookConfiguration(url: url)
            configuration.maximumConnections = 2
            let worker = WebhookWorker(
                pool: pool, configuration: configuration, transport: transport, opener: nil, metrics: Metrics())
            let running = Task { try await worker.run() }
            _ = try await pool.query(
                "INSERT INTO events (stream_name, position, type, data) VALUES ('visit-v-7', 1, 'scheduled', '{}')")
            try await eventually("sent", within: 30) { try await WebhookStore(pool: pool).list().first?.state == .sent }
            // The same webhook once more (an operator's retry): a 2xx again, printed once.
            let id = try #require(try await WebhookStore(pool: pool).list().first?.id)
            _ = try await pool.query("UPDATE webhooks SET state = 'dead'")
            try await WebhookStore(pool: pool).retry(id: id)
            worker.wakeUp.signal()
            try await eventually("sent again", within: 30) { try await WebhookStore(pool: pool).list().first?.state == .sent }
            worker.stop()
            _ = try? await running.value
        }
        await transport.close()
        let lines = try String(contentsOfFile: printed, encoding: .utf8).split(separator: "\n")
        #expect(lines.count == 1 && lines.first?.hasPrefix("visit.event v-7 ") == true, "\(lines)")
    }
}
