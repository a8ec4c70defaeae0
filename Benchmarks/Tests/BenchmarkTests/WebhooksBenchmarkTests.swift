import Foundation
import TestSupport
import Testing

/// `livevisits-bench webhooks`, run small: every phase delivers what it wrote (a worker that sent nothing
/// would print a rate of nothing) and the summary carries both push rates and their ratio.
@Suite(.serialized, .timeLimit(.minutes(5))) struct WebhooksBenchmarkTests {
    @Test func aSmallRunDeliversEveryWebhook() async throws {
        let outcome = try await BenchmarkRun.livevisitsBench([
            "webhooks", "--count", "400", "--pushes", "200", "--rounds", "1",
        ])
        #expect(outcome.status == 0, "webhooks failed: \(outcome.stderr.suffix(2000))")
        #expect(outcome.stdout.contains("(0 failed)"), "\(outcome.stdout)")
        #expect(outcome.stdout.contains("(400 sent)"), "\(outcome.stdout)")
        #expect(outcome.stdout.contains("pushes/s:") && outcome.stdout.contains("ratio"), "\(outcome.stdout)")
    }
}
