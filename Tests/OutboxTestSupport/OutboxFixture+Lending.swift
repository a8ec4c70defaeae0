import Outbox
import Runtime
import TestSupport

/// Lends a fresh `OutboxFixture` to `body` and closes it once `body` has returned or thrown.
public func withOutboxFixture<Result>(
    clock: any WallClock = SystemClock(), configuration: OutboxConfiguration = OutboxFixture.fastConfiguration,
    isolation: isolated (any Actor)? = #isolation,
    _ body: (OutboxFixture) async throws -> Result
) async throws -> Result {
    try await withResource(
        { try await OutboxFixture.make(clock: clock, configuration: configuration) }, close: { await $0.close() }, body)
}
