import Foundation
import Testing

/// `GET /v1/keys`, the operators' audit of API keys: ops only; each key's id, role, subject, who minted it,
/// when it was made and revoked, newest first; never a key or its hash.
@Suite(.timeLimit(.minutes(5))) struct KeyAuditRouteTests {
    @Test func opsListsEveryKeyAndOtherRolesAreRefused() async throws {
        try await withAPIServer { api in
            let technician = try await api.key(.technician, "t-audit")
            let customer = try await api.key(.customer, "c-audit")
            let minted = try await api.call(
                "POST", "/v1/keys", key: api.dispatcher, json: #"{"role":"customer","subject":"c-minted"}"#)
            #expect(minted.status == 201)
            let mintedId = try #require(minted.json?["keyId"] as? String)
            #expect(try await api.call("DELETE", "/v1/keys/\(mintedId)", key: api.ops).status == 204)

            for key in [api.dispatcher, technician, customer] {
                let refused = try await api.call("GET", "/v1/keys", key: key)
                #expect(refused.status == 403)
                #expect(refused.errorCode == "forbidden")
            }
            #expect(try await api.call("GET", "/v1/keys", key: nil).status == 401)

            let listed = try await api.call("GET", "/v1/keys", key: api.ops)
            #expect(listed.status == 200)
            let keys = try #require(listed.json?["keys"] as? [[String: Any]])
            // The server's dispatcher and ops keys, the two minted in the database and the one over the API.
            #expect(keys.count == 5)
            for key in keys {
                #expect(Set(key.keys) == ["keyId", "role", "subject", "name", "createdBy", "createdAt", "revokedAt"], "\(key)")
            }
            let revoked = try #require(keys.first { $0["keyId"] as? String == mintedId })
            #expect(revoked["role"] as? String == "customer")
            #expect(revoked["subject"] as? String == "c-minted")
            #expect(revoked["revokedAt"] is Int, "revoked: a time")
            #expect(revoked["createdBy"] as? String == api.dispatcher.split(separator: "_")[1].description, "minted by that key")
            let live = try #require(keys.first { $0["subject"] as? String == "t-audit" })
            #expect(live["revokedAt"] is NSNull)
            #expect(live["createdAt"] is Int)
            for secret in [api.dispatcher, api.ops, technician, customer] {
                let secretPart = String(secret.split(separator: "_").last!)
                #expect(!listed.text.contains(secretPart), "no key, no secret")
            }
            #expect(!listed.text.contains("secret") && !listed.text.contains("hash"))
            let createdAts = keys.compactMap { $0["createdAt"] as? Int }
            #expect(createdAts == createdAts.sorted(by: >), "newest first")

            let customers = try await api.call("GET", "/v1/keys?role=customer&limit=1", key: api.ops)
            let customerKeys = try #require(customers.json?["keys"] as? [[String: Any]])
            #expect(customerKeys.count == 1 && customerKeys.allSatisfy { $0["role"] as? String == "customer" })
            #expect(try await api.call("GET", "/v1/keys?role=admin", key: api.ops).status == 422)
            #expect(try await api.call("GET", "/v1/keys?limit=0", key: api.ops).status == 422)
        }
    }
}
