import APIStores
import Foundation
import Postgres
import Testing
import VisitProjections

/// The visit answer exists twice: in Swift (`VisitReadModel.body(view:liveActivities:)`, what GET and an
/// unkeyed command answer) and in SQL (`IdempotencyStore.storeVisitAnswerStatement`, what a keyed command
/// stores and answers in its own transaction, from the view it was given). The two must agree byte for byte.
@Suite(.timeLimit(.minutes(2))) struct IdempotencyStoreTests {
    @Test func theStoredVisitAnswerIsTheSwiftBodyByteForByte() async throws {
        try await withAPIServer { api in
            let id = uniqueID("v")
            let customer = uniqueID("c")
            let now = Int(Date().timeIntervalSince1970)
            // Text that an SQL copy could get wrong: quotes, a backslash, non-ASCII, an emoji, escapes.
            let schedule = """
                {"visitId":"\(id)","customerId":"\(customer)",\
                "attributes":{"customerFirstName":"Zoë \\"Z\\" \\\\ 🚐","serviceAddress":"12 Elm Row \\/ \\u00e9","jobSummary":"Boiler check"},\
                "technician":{"id":"t-1","name":"Sam","avatarSymbol":"person.crop.circle","vanDescription":"White van"},\
                "arrivalWindow":{"start":\(now + 600),"end":\(now + 1800)},"kilometresAway":14.0}
                """
            #expect(try await api.call("POST", "/v1/visits", key: api.dispatcher, json: schedule).status == 201)
            let customerKey = try await api.key(.customer, customer)
            for count in 0...2 {
                if count > 0 {
                    let registration = "{\"pushToken\":\"\(pushToken("\(id)-\(count)"))\",\"environment\":\"sandbox\"}"
                    #expect(
                        try await api.call(
                            "PUT", "/v1/visits/\(id)/live-activities/a-\(count)", key: customerKey, json: registration
                        )
                        .status == 204)
                }
                let (row, stored) = try await api.pool.withConnection { c -> (VisitReadModel.Row?, PostgresRow?) in
                    let scope = IdempotencyScope(keyId: "pin", route: "POST /pin", key: "k-\(id)-\(count)")
                    let row = try VisitReadModel.row(visitId: id, on: c)
                    return (
                        row,
                        try c.query(
                            IdempotencyStore.storeVisitAnswerStatement(
                                scope, requestBody: "{}", visitId: id, view: row?.view ?? "")
                        ).first
                    )
                }
                let visit = try #require(row)
                let swift = visit.body(liveActivities: count)
                #expect(stored?["response_body"].map { Array($0.utf8) } == Array(swift.utf8), "\(count) live activities")
                #expect(stored?["response_etag"] == "\"\(visit.version)\"")
                let read = try await api.call("GET", "/v1/visits/\(id)", key: api.dispatcher)
                #expect(read.text == (try await api.opened(swift)), "the answer is the stored body, opened")
                #expect(!swift.contains("Boiler check"), "the stored body holds the personal fields sealed")
            }
            // With broadcast channels (contract §7): both environments, base64 ids with '/', '+' and '=', and a
            // creation still in flight (no id: not listed).
            try await api.pool.withConnection { c in
                for (environment, channel) in [("sandbox", "ab/c+d=="), ("production", "Zm9v/+==")] {
                    _ = try c.query(
                        """
                        INSERT INTO channels (visit_id, environment, customer_id, target, channel_id, state, claimed_at)
                        VALUES (\(id), \(environment), \(customer), \("t-" + environment), \(channel), 'active', 0)
                        """)
                }
                _ = try c.query(
                    """
                    INSERT INTO channels (visit_id, environment, customer_id, target, state, claimed_at)
                    VALUES (\(id + "-other"), 'sandbox', \(customer), 'creating-target', 'creating', 0)
                    """)
            }
            let (row, stored) = try await api.pool.withConnection { c -> (VisitReadModel.Row?, PostgresRow?) in
                let scope = IdempotencyScope(keyId: "pin", route: "POST /pin", key: "k-\(id)-channels")
                let row = try VisitReadModel.row(visitId: id, on: c)
                return (
                    row,
                    try c.query(
                        IdempotencyStore.storeVisitAnswerStatement(scope, requestBody: "{}", visitId: id, view: row?.view ?? "")
                    )
                    .first
                )
            }
            let swift = try #require(row).body(
                liveActivities: 2,
                channels: [
                    VisitReadModel.Channel(channelId: "Zm9v/+==", environment: "production"),
                    VisitReadModel.Channel(channelId: "ab/c+d==", environment: "sandbox"),
                ])
            #expect(stored?["response_body"].map { Array($0.utf8) } == Array(swift.utf8))
            #expect(try await api.call("GET", "/v1/visits/\(id)", key: api.dispatcher).text == (try await api.opened(swift)))
            #expect(
                swift.hasSuffix(
                    #""channels":[{"channelId":"Zm9v/+==","environment":"production"},{"channelId":"ab/c+d==","environment":"sandbox"}]}"#
                ))
        }
    }
}
