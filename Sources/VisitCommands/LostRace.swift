import EventStore

/// The one retry of the write side: a write that lost a version race to a concurrent writer
/// (`wrongExpectedVersion`) is run again on the new state. The retries are spread out a little (a few
/// milliseconds, growing with each attempt) so that racing writers stop colliding, and give up after
/// `maxAttempts` with the last conflict.
public enum LostRace {
    public static let maxAttempts = 50

    /// Runs `body`, again after each lost race while `retry` is true (when the caller pinned a version with
    /// `If-Match`, or creates a stream, the conflict is the answer and comes back at once).
    public static func retrying<T>(_ retry: Bool = true, _ body: () async throws -> T) async throws -> T {
        var attempt = 0
        while true {
            attempt += 1
            do {
                return try await body()
            } catch let error as EventStoreError where error.code == .wrongExpectedVersion && retry && attempt < maxAttempts {
                try await Task.sleep(nanoseconds: UInt64.random(in: 0...UInt64(min(attempt, 10)) * 2_000_000))
            }
        }
    }
}
