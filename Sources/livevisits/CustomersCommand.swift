import APIStores
import CustomerErasure
import EventStore
import PersonalData
import Postgres
import Runtime

/// `livevisits customers erase CUSTOMER_ID`: the right to be forgotten (contract §10) from the command line,
/// the same `CustomerErasure` as `DELETE /v1/customers/{id}`. It takes any customer id the database holds,
/// including ids booked before the one id grammar (contract §15) that no API path can name.
enum CustomersCommand {
    static let menu = CommandMenu(
        command: "livevisits customers",
        entries: [
            .init("erase", "CUSTOMER_ID", "erase a customer (any id the database holds) once their visits have ended")
        ])

    static let eraseSyntax = CommandSyntax(
        command: "livevisits customers erase",
        summary:
            "Erases a customer as DELETE /v1/customers/{id} does: their data key destroyed, their tokens, preferences and keys deleted.",
        positionals: "CUSTOMER_ID", positionalCount: 1...1,
        details:
            "CUSTOMER_ID is taken as it is stored, so ids outside A-Z a-z 0-9 . _ ~ - (booked before the id grammar) can be erased; quote it for the shell. Refused while a visit of theirs has not ended."
    )

    /// Who the erasure event records as the actor: the operator at the command line.
    static let actor = Caller(keyId: "cli", role: .ops, subject: nil)

    static func run(_ arguments: [String]) async throws {
        let (_, rest) = try menu.select(arguments)
        let parsed = try eraseSyntax.parse(rest)
        let customerId = parsed.positionals[0]
        guard !customerId.isEmpty else { throw eraseSyntax.mistake("CUSTOMER_ID must not be empty") }
        let url = try Configuration().databaseURL()
        let erased = try await PostgresPool.withPool(PostgresConfiguration(url: url, size: 1)) { pool in
            let erasure = CustomerErasure(
                pool: pool, store: EventStore(pool: pool), keyCache: APIKeyCache(), dataKeyCache: PersonalDataKeyCache(),
                clock: SystemClock())
            do {
                return try await erasure.erase(customerId: customerId, by: actor)
            } catch let refusal as CustomerErasure.Refusal {
                throw CommandFailure(refusal.message)
            }
        }
        Console.line(
            "erased customer \(erased.customerId): \(erased.visits) visits, \(erased.revokedKeys.count) keys deleted, "
                + "\(erased.destroyedDataKeys.count) data keys destroyed")
    }
}
