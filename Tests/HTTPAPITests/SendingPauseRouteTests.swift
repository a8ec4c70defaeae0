import Foundation
import Testing

/// `GET /v1/ops/outbox/pause` (ops): the console's "sending paused, and why", read from the fleet's pause.
@Suite(.serialized, .timeLimit(.minutes(2))) struct SendingPauseRouteTests {
    @Test func saysWhetherSendingIsPausedAndWhy() async throws {
        try await withAPIServer { api in
            try await api.pool.withConnection { c in try c.query("DELETE FROM outbox_pause") }
            let idle = try await api.call("GET", "/v1/ops/outbox/pause", key: api.ops)
            #expect(idle.status == 200)
            #expect(idle.json?["paused"] as? Bool == false)
            #expect(idle.json?["reason"] is NSNull)

            let now = Date().timeIntervalSince1970
            try await api.pool.withConnection { c in
                try c.query(
                    """
                    INSERT INTO outbox_pause (singleton, paused_until, paused_at, reason)
                    VALUES (true, \(now + 300), \(now), 'InvalidProviderToken')
                    """)
            }
            let paused = try await api.call("GET", "/v1/ops/outbox/pause", key: api.ops)
            #expect(paused.json?["paused"] as? Bool == true)
            #expect(paused.json?["reason"] as? String == "InvalidProviderToken")
            #expect((paused.json?["until"] as? Double ?? 0) >= now + 299)
            #expect(try await api.call("GET", "/v1/ops/outbox/pause", key: api.dispatcher).status == 403)
        }
    }
}
