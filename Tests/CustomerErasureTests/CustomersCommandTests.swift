import APIStores
import EventStore
import Foundation
import LiveActivityLedger
import Postgres
import Runtime
import TestSupport
import Testing
import VisitDomain
import VisitTestSupport

/// `livevisits customers erase CUSTOMER_ID` (contract §15: existing data with ids outside the one grammar stays
/// erasable through `livevisits`): the built binary erases a customer booked before the grammar, whose id no
/// API path can name, as `DELETE /v1/customers/{id}` erases the others.
@Suite(.timeLimit(.minutes(10))) struct CustomersCommandTests {
    /// A visit booked for `customer` as it could be before the grammar: the domain's event with the id set
    /// after parsing (the API refuses such a body now).
    func bookLegacy(_ fixtures: VisitFixtures, visit: String, customer: String) async throws {
        let start = Int(fixtures.clock.now()) + 600
        let body = """
            {"visitId": "\(visit)", "customerId": "c-placeholder",
             "attributes": {"customerFirstName": "Jane", "serviceAddress": "1 Old Road", "jobSummary": "Leak"},
             "technician": {"id": "t-1", "name": "Sam", "avatarSymbol": "person.crop.circle", "vanDescription": "White van"},
             "arrivalWindow": {"start": \(start), "end": \(start + 600)}}
            """
        var scheduled = try ScheduleVisitRequest.parse(Array(body.utf8)) { visit }
        scheduled.customerId = customer
        _ = try await fixtures.handler.schedule(scheduled, context: VisitFixtures.dispatcher)
    }

    func erase(_ fixtures: VisitFixtures, _ arguments: [String]) async throws -> Subprocess.Outcome {
        var environment = ProcessInfo.processInfo.environment
        environment["LIVEVISITS_DATABASE_URL"] = fixtures.databaseURL
        return try await Subprocess.run(
            try await BuiltProduct.livevisits(), ["customers", "erase"] + arguments, environment: environment)
    }

    func count(_ fixtures: VisitFixtures, _ table: String, _ column: String, _ value: String) async throws -> Int {
        try await fixtures.pool.withConnection { c in
            try c.query(PostgresQuery(sql: "SELECT count(*) AS n FROM \(table) WHERE \(column) = $1", binds: [.text(value)]))
                .first?.int("n") ?? 0
        }
    }

    @Test func aCustomerWhoseIdIsOutsideTheGrammarIsErasedByTheCommand() async throws {
        try await VisitFixtures.withOutboxPushes { fixtures in
            let legacy = "Jane Doe"
            try await bookLegacy(fixtures, visit: "v-legacy", customer: legacy)
            try await bookLegacy(fixtures, visit: "v-active", customer: "a@b")
            try await fixtures.pool.withConnection { c in
                try KeyStore.insert(
                    keyId: "00112233aabbccdd", secretHash: String(repeating: "0", count: 64), role: "customer", subject: legacy,
                    createdBy: nil, on: c)
                try TokenRegistry(clock: fixtures.clock).setPreferences(
                    customerId: legacy, deviceId: "d-1", liveActivitiesEnabled: true, frequentPushesEnabled: true, on: c)
            }

            let active = try await erase(fixtures, [legacy])
            #expect(active.status == 1, "\(active.stdout) \(active.stderr)")
            #expect(active.stderr == "livevisits: customer Jane Doe has a visit that has not ended; erase them after it ends\n")
            #expect(try await count(fixtures, "api_keys", "subject", legacy) == 1, "nothing changed")

            try await fixtures.post("v-legacy", #"{"type":"cancelled"}"#)
            let erased = try await erase(fixtures, [legacy])
            #expect(erased.status == 0, "\(erased.stderr)")
            #expect(erased.stdout == "erased customer Jane Doe: 1 visits, 1 keys deleted, 0 data keys destroyed\n")
            #expect(try await count(fixtures, "api_keys", "subject", legacy) == 0)
            #expect(try await count(fixtures, "device_preferences", "customer_id", legacy) == 0)
            #expect(try await count(fixtures, "personal_data_keys", "customer_id", legacy) == 0)
            let audit = try await fixtures.pool.withConnection { try EventStore.readStream("customer-\(legacy)", on: $0) }
            #expect(audit.map(\.type) == ["customerErased"])
            #expect(audit.first?.metadata.actorRole == "ops" && audit.first?.metadata.actorSubject == "cli")
            // The other customer, whose visit is still active, was not touched.
            #expect(try await count(fixtures, "visits", "customer_id", "a@b") == 1)

            let again = try await erase(fixtures, ["Nobody Known"])
            #expect(again.status == 1 && again.stderr == "livevisits: customer not found\n", "\(again.stderr)")
            let missing = try await erase(fixtures, [])
            #expect(missing.status == 2 && missing.stderr.split(separator: "\n").count == 1, "\(missing.stderr)")
        }
    }
}
