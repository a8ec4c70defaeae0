import APIStores
import Foundation
import Testing

/// A key may carry a person's display name (`POST /v1/keys` `{"name"}`, `livevisits keys create --name`): stored
/// with the key, echoed when minted, listed for the audit, and carried by every event appended with the key as
/// `actor.name` in the visit's history — absent for a key without one.
@Suite(.timeLimit(.minutes(5))) struct KeyNameTests {
    func actors(_ api: APIServer, _ visitId: String) async throws -> [[String: Any]] {
        let history = try await api.call("GET", "/v1/visits/\(visitId)/events", key: api.ops)
        #expect(history.status == 200, "\(history.text)")
        return (history.json?["events"] as? [[String: Any]] ?? []).compactMap { $0["actor"] as? [String: Any] }
    }

    @Test func eventsCarryTheNameOfTheKeyThatAppendedThem() async throws {
        // The key cache in use (its revocation listener listening): a cached key row carries the name too.
        try await withAPIServer(keyCache: APIKeyCache(timeToLive: .seconds(60)), listenForRevocations: true) { api in
            let dana = try await api.pool.withConnection {
                try APIKeys.mint(role: .dispatcher, subject: nil, name: "Dana Ñúñez", createdBy: nil, on: $0)
            }
            let minted = try await api.call(
                "POST", "/v1/keys", key: dana.key, json: #"{"role":"technician","subject":"t-1","name":"Marcus"}"#)
            #expect(minted.status == 201, "\(minted.text)")
            #expect(minted.json?["name"] as? String == "Marcus" && minted.json?["subject"] as? String == "t-1")
            let marcus = try #require(minted.json?["key"] as? String)
            let unnamed = try await api.call("POST", "/v1/keys", key: dana.key, json: #"{"role":"customer","subject":"c-1"}"#)
            #expect(unnamed.status == 201 && unnamed.json?["name"] is NSNull, "\(unnamed.text)")

            let visit = uniqueID("v")
            #expect(try await api.schedule(visit, technician: "t-1", key: dana.key).status == 201)
            #expect(try await api.post(visit, #"{"type":"enRoute","kilometresAway":5}"#, key: marcus).status == 201)
            #expect(try await api.post(visit, #"{"type":"nearby","kilometresAway":1}"#, key: marcus).status == 201)
            #expect(try await api.post(visit, #"{"type":"progress","kilometresAway":0.5}"#).status == 201)
            let actors = try await actors(api, visit)
            #expect(actors.count == 4)
            #expect(actors[0]["name"] as? String == "Dana Ñúñez" && actors[0]["role"] as? String == "dispatcher")
            #expect(actors[1]["name"] as? String == "Marcus" && actors[1]["subject"] as? String == "t-1")
            #expect(actors[2]["name"] as? String == "Marcus", "the second request, its key row from the cache")
            #expect(Set(actors[3].keys) == ["role", "subject"], "a key without a name: no name at all")

            let listed = try #require(try await api.call("GET", "/v1/keys", key: api.ops).json?["keys"] as? [[String: Any]])
            #expect(listed.first { $0["keyId"] as? String == dana.keyId }?["name"] as? String == "Dana Ñúñez")
            #expect(listed.first { $0["subject"] as? String == "t-1" }?["name"] as? String == "Marcus")
            #expect(listed.first { $0["subject"] as? String == "c-1" }?["name"] is NSNull)
        }
    }

    @Test func aNameIsPlainTextOfAFewWords() async throws {
        try await withAPIServer { api in
            for (name, why) in [
                (#""Dana\u0007""#, "control"), (#""Dana\nSmith""#, "control"), (#""\u202Eana""#, "bidirectional"),
                (#""   ""#, "empty"), ("\"" + String(repeating: "é", count: 65) + "\"", "bytes"), ("42", "string"),
            ] {
                let refused = try await api.call(
                    "POST", "/v1/keys", key: api.dispatcher, json: #"{"role":"technician","subject":"t-1","name":\#(name)}"#)
                #expect(refused.status == 422, "\(name): \(refused.text)")
                #expect(refused.text.contains("name") && refused.text.contains(why), "\(name): \(refused.text)")
            }
            let longest = String(repeating: "é", count: 64)
            let minted = try await api.call(
                "POST", "/v1/keys", key: api.dispatcher, json: #"{"role":"technician","subject":"t-1","name":"\#(longest)"}"#)
            #expect(minted.status == 201 && minted.json?["name"] as? String == longest, "\(minted.text)")
        }
    }
}
