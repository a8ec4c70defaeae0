import Outbox
import OutboxTestSupport
import Testing

/// Expects of a delivery's `attempts` (oldest first, the last one the success) that the backoff chosen
/// after each failure lies within `backoff`'s full-jitter bound and that no retry started before its
/// backoff had passed: gaps only ever exceed the schedule, never undercut it. The success chose none.
func expectBackoffsHeld(
    _ attempts: [DeliveryAttempt], _ backoff: Backoff, sourceLocation: SourceLocation = #_sourceLocation
) throws {
    for i in 1..<attempts.count {
        let chosen = try #require(attempts[i - 1].retryAfterSeconds, sourceLocation: sourceLocation)
        #expect(
            chosen >= 0 && chosen <= backoff.ceiling(retry: i - 1), "backoff \(i) was \(chosen)",
            sourceLocation: sourceLocation)
        #expect(attempts[i].attemptedAt - attempts[i - 1].attemptedAt >= chosen, sourceLocation: sourceLocation)
    }
    #expect(attempts.last?.retryAfterSeconds == nil, sourceLocation: sourceLocation)
}
