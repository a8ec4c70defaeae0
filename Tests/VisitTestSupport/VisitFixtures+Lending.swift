import Postgres

extension VisitFixtures {
    /// Lends fixtures whose pushes go to the real outbox tables (`withOutbox()`) to `body`, and closes their
    /// pool after it, also when it throws.
    public static func lendingOutbox(_ body: (VisitFixtures) async throws -> Void) async throws {
        let fixtures = try await withOutbox()
        do {
            try await body(fixtures)
        } catch {
            await fixtures.pool.close()
            throw error
        }
        await fixtures.pool.close()
    }
}
