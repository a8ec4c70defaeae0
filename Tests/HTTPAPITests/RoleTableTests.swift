import Foundation
import Testing

/// The role table of contract §4, route by route, with cross-customer and cross-technician attempts.
@Suite(.timeLimit(.minutes(5))) struct RoleTableTests {
    @Test func readsAreScopedToTheCallersVisits() async throws {
        try await withAPIServer { api in
            let mine = uniqueID("v")
            let theirs = uniqueID("v")
            try await api.schedule(mine, customer: "c-1", technician: "t-1")
            try await api.schedule(theirs, customer: "c-2", technician: "t-2")
            let customer = try await api.key(.customer, "c-1")
            let technician = try await api.key(.technician, "t-1")
            for key in [customer, technician] {
                #expect(try await api.call("GET", "/v1/visits/\(mine)", key: key).status == 200)
                #expect(try await api.call("GET", "/v1/visits/\(mine)/events", key: key).status == 200)
                // Another's visit does not exist for this caller: 404, not 403.
                let other = try await api.call("GET", "/v1/visits/\(theirs)", key: key)
                #expect(other.status == 404)
                #expect(other.errorCode == "not_found")
                #expect(try await api.call("GET", "/v1/visits/\(theirs)/events", key: key).status == 404)
            }
            #expect(try await api.call("GET", "/v1/visits/\(theirs)", key: api.ops).status == 200)
            #expect(try await api.call("GET", "/v1/visits/\(theirs)", key: api.dispatcher).status == 200)
        }
    }

    @Test func whoMayPostWhichEvent() async throws {
        try await withAPIServer { api in
            let id = uniqueID("v")
            let other = uniqueID("v")
            try await api.schedule(id, customer: "c-1", technician: "t-1")
            try await api.schedule(other, customer: "c-1", technician: "t-2")
            let technician = try await api.key(.technician, "t-1")
            let customer = try await api.key(.customer, "c-1")
            let ops = api.ops

            #expect(try await api.post(id, #"{"type":"enRoute"}"#, key: customer).status == 403)
            #expect(try await api.post(id, #"{"type":"enRoute"}"#, key: ops).status == 403)
            #expect(try await api.post(id, #"{"type":"cancelled","reason":"x"}"#, key: technician).status == 403)
            let reassign =
                #"{"type":"reassigned","technician":{"id":"t-9","name":"Kim","avatarSymbol":"person","vanDescription":"Red van"}}"#
            #expect(try await api.post(id, reassign, key: technician).status == 403)
            // Another technician's visit: 404 (its existence is not leaked), and nothing appended.
            let cross = try await api.post(other, #"{"type":"enRoute"}"#, key: technician)
            #expect(cross.status == 404)
            #expect(try await api.eventCount(other) == 1)
            // The assigned technician posts status events.
            #expect(try await api.post(id, #"{"type":"enRoute"}"#, key: technician).status == 201)
            #expect(try await api.post(id, #"{"type":"progress","kilometresAway":3}"#, key: technician).status == 201)
            #expect(try await api.eventCount(id) == 3)
        }
    }

    @Test func reassignmentTakesAccessAway() async throws {
        try await withAPIServer { api in
            let id = uniqueID("v")
            try await api.schedule(id, technician: "t-old")
            let old = try await api.key(.technician, "t-old")
            let new = try await api.key(.technician, "t-new")
            #expect(try await api.post(id, #"{"type":"enRoute"}"#, key: old).status == 201)
            #expect(try await api.call("GET", "/v1/visits/\(id)", key: new).status == 404)
            let reassign =
                #"{"type":"reassigned","technician":{"id":"t-new","name":"Kim","avatarSymbol":"person","vanDescription":"Red van"}}"#
            let moved = try await api.post(id, reassign)
            #expect(moved.status == 201)
            #expect(moved.json?["status"] as? String == "scheduled")
            #expect(try await api.call("GET", "/v1/visits/\(id)", key: old).status == 404)
            #expect(try await api.post(id, #"{"type":"nearby"}"#, key: old).status == 404)
            #expect(try await api.call("GET", "/v1/visits/\(id)", key: new).status == 200)
            #expect(try await api.post(id, #"{"type":"nearby"}"#, key: new).status == 201)
        }
    }

    @Test func deviceRoutesBelongToTheCustomer() async throws {
        try await withAPIServer { api in
            let id = uniqueID("v")
            try await api.schedule(id, customer: "c-1", technician: "t-1")
            let customer = try await api.key(.customer, "c-1")
            let stranger = try await api.key(.customer, "c-2")
            let technician = try await api.key(.technician, "t-1")
            let token = "{\"pushToken\":\"\(pushToken("role"))\",\"environment\":\"sandbox\"}"
            let activity = "/v1/visits/\(id)/live-activities/a-1"
            #expect(try await api.call("PUT", activity, key: stranger, json: token).status == 404)
            #expect(try await api.call("PUT", activity, key: technician, json: token).status == 403)
            #expect(try await api.call("PUT", activity, key: api.dispatcher, json: token).status == 403)
            #expect(try await api.call("DELETE", activity, key: stranger).status == 404)
            #expect(
                try await api.call("PUT", "/v1/customers/c-1/push-to-start-tokens/d-1", key: stranger, json: token).status == 404)
            #expect(
                try await api.call("PUT", "/v1/customers/c-1/push-to-start-tokens/d-1", key: technician, json: token).status
                    == 403)
            let prefs = #"{"liveActivitiesEnabled":true,"frequentPushesEnabled":false}"#
            #expect(
                try await api.call("PUT", "/v1/customers/c-1/devices/d-1/preferences", key: stranger, json: prefs).status == 404)
            #expect(
                try await api.call("PUT", "/v1/customers/c-1/devices/d-1/preferences", key: customer, json: prefs).status == 204)
            #expect(try await api.call("DELETE", "/v1/customers/c-1/push-to-start-tokens/d-1", key: stranger).status == 404)
        }
    }

    @Test func keysAndOpsRoutes() async throws {
        try await withAPIServer { api in
            let customer = try await api.key(.customer, "c-1")
            let technician = try await api.key(.technician, "t-1")
            // Minting: dispatcher only, technician/customer only.
            let minted = try await api.call(
                "POST", "/v1/keys", key: api.dispatcher, json: #"{"role":"technician","subject":"t-5"}"#)
            #expect(minted.status == 201)
            #expect(minted.json?["role"] as? String == "technician")
            #expect(minted.json?["subject"] as? String == "t-5")
            let newKey = try #require(minted.json?["key"] as? String)
            let keyId = try #require(minted.json?["keyId"] as? String)
            #expect(try await api.call("GET", "/v1/visits", key: newKey).status == 200)
            #expect(
                try await api.call("POST", "/v1/keys", key: api.dispatcher, json: #"{"role":"ops","subject":"x"}"#).status == 422)
            #expect(try await api.call("POST", "/v1/keys", key: api.dispatcher, json: #"{"role":"customer"}"#).status == 422)
            for key in [customer, technician, api.ops] {
                #expect(
                    try await api.call("POST", "/v1/keys", key: key, json: #"{"role":"customer","subject":"c-9"}"#).status == 403)
            }
            // Revoking: not by customers or technicians; dispatcher for the keys it may mint; unknown id 404.
            #expect(try await api.call("DELETE", "/v1/keys/\(keyId)", key: customer).status == 403)
            #expect(try await api.call("DELETE", "/v1/keys/\(keyId)", key: api.dispatcher).status == 204)
            #expect(try await api.call("GET", "/v1/visits", key: newKey).status == 401)
            #expect(try await api.call("DELETE", "/v1/keys/\(keyId)", key: api.dispatcher).status == 404)
            #expect(try await api.call("DELETE", "/v1/keys/0123456789abcdef", key: api.ops).status == 404)
            let opsKeyId = String(api.ops.split(separator: "_")[1])
            #expect(try await api.call("DELETE", "/v1/keys/\(opsKeyId)", key: api.dispatcher).status == 404)
            // Ops routes: ops only.
            for key in [customer, technician, api.dispatcher] {
                #expect(try await api.call("GET", "/v1/ops/outbox", key: key).status == 403)
                #expect(try await api.call("POST", "/v1/ops/outbox/1/retry", key: key).status == 403)
                #expect(try await api.call("POST", "/v1/ops/projections/visits/rebuild", key: key).status == 403)
            }
            #expect(try await api.call("GET", "/v1/ops/outbox?state=pending&limit=5", key: api.ops).status == 200)
            #expect(try await api.call("GET", "/v1/ops/outbox?state=lost", key: api.ops).status == 422)
            #expect(try await api.call("POST", "/v1/ops/outbox/999999/retry", key: api.ops).status == 404)
            #expect(try await api.call("POST", "/v1/ops/projections/nothing/rebuild", key: api.ops).status == 404)
            try await api.schedule(uniqueID("v"))
            let rebuilt = try await api.call("POST", "/v1/ops/projections/visits/rebuild", key: api.ops)
            #expect(rebuilt.status == 200)
            #expect(rebuilt.json?["visits"] as? Int == 1)
        }
    }
}
