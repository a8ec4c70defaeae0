import Postgres

/// A write's work inside a transaction that someone else opens and commits.
public typealias TransactionWork<Outcome> = @Sendable (PostgresConnection) throws -> Outcome

extension IdempotentTransactions {
    /// `work`, then `transform` of its outcome, as one piece of work in the same transaction.
    public static func work<Outcome, Next>(
        _ work: @escaping TransactionWork<Outcome>, then transform: @escaping @Sendable (Outcome) throws -> Next
    ) -> TransactionWork<Next> {
        { try transform(work($0)) }
    }
}

/// The API's write transactions (contract §6, "Idempotency"): a write runs in one transaction, and with an
/// `Idempotency-Key` its first answer is stored under the key in that same transaction, so a key never
/// holds an answer to a write that did not commit, nor a committed write without its answer.
public struct IdempotentTransactions: Sendable {
    public let pool: PostgresPool

    public init(pool: PostgresPool) {
        self.pool = pool
    }

    /// Runs `work` in one transaction. Without a claim, that is all. With one, the key is claimed first (taken:
    /// throws `IdempotencyClaim.Taken` with what it holds), `work` runs under a savepoint, and the outcome is
    /// recorded under the key (`stored`) before the commit. When `work` throws an error that `refusal` turns
    /// into an outcome, what it did is rolled back to the savepoint and that outcome is kept instead; an error
    /// it does not turn (nil) ends the transaction, nothing stored.
    public func run<Outcome: Sendable>(
        claim: IdempotencyClaim?, _ work: @escaping TransactionWork<Outcome>,
        refusal: @escaping @Sendable (any Error) -> Outcome?, stored: @escaping @Sendable (Outcome) -> StoredAnswer
    ) async throws -> Outcome {
        try await pool.withTransaction { c -> Outcome in
            guard let claim else { return try work(c) }
            guard try IdempotencyStore.claim(claim.scope, requestBody: claim.body, on: c) else {
                throw IdempotencyClaim.Taken(record: try IdempotencyStore.find(claim.scope, on: c))
            }
            try c.execute(script: "SAVEPOINT command")
            var outcome: Outcome
            do {
                outcome = try work(c)
                try c.execute(script: "RELEASE SAVEPOINT command")
            } catch {
                guard let refused = refusal(error) else { throw error }
                try c.execute(script: "ROLLBACK TO SAVEPOINT command")
                outcome = refused
            }
            try IdempotencyStore.record(claim.scope, answer: stored(outcome), on: c)
            return outcome
        }
    }
}
