import APNs
import Foundation
import OutboxAPNs
import PersonalData
import Postgres
import Runtime
import TestSupport
import Testing
import VisitProjections

/// Contract §10: customers' personal data sealed everywhere at rest, opened on the way out, and erased for
/// good by destroying the customer's data key — also after a replay — while other customers are untouched.
@Suite(.timeLimit(.minutes(5))) struct PersonalDataTests {
    static let pgDump = "/usr/lib/postgresql/15/bin/pg_dump"

    /// A wrapping key file in a fresh temporary folder.
    static func keyFile() throws -> (path: String, key: WrappingKey) {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("lv-pd-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        let path = dir.appendingPathComponent("personal-data.key").path
        return (path, try WrappingKey.generate(path: path))
    }

    static func visitJSON(_ visitId: String, customer: String, name: String, address: String, job: String) -> String {
        let now = Int(Date().timeIntervalSince1970)
        return """
            {"visitId":"\(visitId)","customerId":"\(customer)",\
            "attributes":{"customerFirstName":"\(name)","serviceAddress":"\(address)","jobSummary":"\(job)"},\
            "technician":{"id":"t-1","name":"Sam","avatarSymbol":"person.crop.circle","vanDescription":"White van"},\
            "arrivalWindow":{"start":\(now + 600),"end":\(now + 1800)},"kilometresAway":14.0}
            """
    }

    static func dump(_ url: String) async throws -> String {
        try requireTool(pgDump, installedBy: "postgresql-15")
        let outcome = try await Subprocess.run(pgDump, ["--no-owner", "--dbname=\(url)"])
        #expect(outcome.status == 0, "\(outcome.stderr)")
        #expect(outcome.stdout.contains("personal_data_keys"), "the dump is of the whole database")
        return outcome.stdout
    }

    func attributes(_ answer: RawResponse) -> [String: Any]? { answer.json?["attributes"] as? [String: Any] }

    @Test func aDumpNeverHoldsThePlainPersonalDataBeforeOrAfterErasure() async throws {
        let file = try PersonalDataTests.keyFile()
        try await withAPIServer(personalData: PersonalDataKeys(current: file.key)) { api in
            let marker = UUID().uuidString.prefix(8).lowercased()
            let name = "Zelda\(marker)"
            let address = "\(marker) Marker Lane"
            let job = "Fix\(marker)boiler"
            let id = uniqueID("v")
            let customer = uniqueID("c")
            let customerKey = try await api.key(.customer, customer)
            // A push-to-start token first, so the start push (with the attributes) is queued in the outbox; an
            // Idempotency-Key, so the answer is stored too.
            let body = PersonalDataTests.visitJSON(id, customer: customer, name: name, address: address, job: job)
            let token = "{\"pushToken\":\"\(pushToken(id))\",\"environment\":\"sandbox\"}"
            #expect(
                try await api.call("PUT", "/v1/customers/\(customer)/push-to-start-tokens/d-1", key: customerKey, json: token)
                    .status
                    == 204)
            let scheduled = try await api.call(
                "POST", "/v1/visits", key: api.dispatcher,
                json: body,
                headers: [("Idempotency-Key", "k-\(id)")])
            #expect(scheduled.status == 201, "\(scheduled.text)")
            #expect(attributes(scheduled)?["customerFirstName"] as? String == name)
            #expect(attributes(scheduled)?["serviceAddress"] as? String == address)
            let starts = try await api.pool.withConnection { c in
                try c.query("SELECT body FROM deliveries WHERE visit_id = \(id) AND kind = 'start'").rows.map {
                    try $0.string("body")
                }
            }
            #expect(
                starts.count == 1 && starts.allSatisfy { $0.contains(SealedText.prefix) }, "the queued start holds them sealed")

            for text in [try await PersonalDataTests.dump(api.databaseURL)] {
                #expect(!text.contains(marker), "no plain marker in the dump before erasure")
                #expect(text.contains(SealedText.prefix))
                #expect(text.contains(file.key.id), "the data keys are wrapped under the key file")
            }
            // The retry of the keyed request is answered from the stored answer, opened.
            let again = try await api.call(
                "POST", "/v1/visits", key: api.dispatcher,
                json: body,
                headers: [("Idempotency-Key", "k-\(id)")])
            #expect(again.text == scheduled.text)

            // A cancellation's reason, kept under an Idempotency-Key too: sealed in the event, the read model and
            // the stored answer, opened on the way out.
            let reason = "Asked\(marker)to cancel"
            let cancel = try await api.post(
                id, #"{"type":"cancelled","reason":"\#(reason)"}"#, headers: [("Idempotency-Key", "c-\(id)")])
            #expect(cancel.status == 201, "\(cancel.text)")
            let history = try await api.call("GET", "/v1/visits/\(id)/events", key: api.dispatcher)
            #expect(history.text.contains(reason), "the history shows the reason, opened")
            let cancelledDump = try await PersonalDataTests.dump(api.databaseURL)
            #expect(!cancelledDump.contains(marker), "no plain reason in the dump")
            #expect(try await api.call("DELETE", "/v1/customers/\(customer)", key: api.ops).status == 204)
            let after = try await PersonalDataTests.dump(api.databaseURL)
            #expect(!after.contains(marker), "no plain marker in the dump after erasure")
            let erasedHistory = try await api.call("GET", "/v1/visits/\(id)/events", key: api.dispatcher)
            let cancelled = ((erasedHistory.json?["events"] as? [[String: Any]]) ?? []).last?["data"] as? [String: Any]
            #expect(cancelled?["reason"] is NSNull, "the reason reads null after erasure")
            #expect(!after.contains(file.key.id), "the customer's data key is gone")
            let replayed = try await api.call(
                "POST", "/v1/visits", key: api.dispatcher,
                json: body,
                headers: [("Idempotency-Key", "k-\(id)")])
            #expect(attributes(replayed)?["customerFirstName"] is NSNull, "the stored answer reads null after erasure")
        }
    }

    @Test func erasureIsRefusedWhileAVisitIsActiveThenNullsTheFieldsEverywhereAlsoAfterAReplay() async throws {
        try await withAPIServer { api in
            let customer = uniqueID("c")
            let other = uniqueID("c")
            let id = uniqueID("v")
            let otherId = uniqueID("v")
            let customerKey = try await api.key(.customer, customer)
            let otherKey = try await api.key(.customer, other)
            #expect(
                try await api.call(
                    "POST", "/v1/visits", key: api.dispatcher,
                    json: PersonalDataTests.visitJSON(id, customer: customer, name: "Erin", address: "1 Gone Road", job: "Leak")
                ).status == 201)
            #expect(
                try await api.call(
                    "POST", "/v1/visits", key: api.dispatcher,
                    json: PersonalDataTests.visitJSON(otherId, customer: other, name: "Olga", address: "2 Kept Road", job: "Tap")
                ).status == 201)
            #expect(
                try await api.call(
                    "PUT", "/v1/visits/\(id)/live-activities/a-1", key: customerKey,
                    json: "{\"pushToken\":\"\(pushToken(id))\",\"environment\":\"sandbox\"}"
                ).status == 204)

            // Only ops; unknown customers are 404; an active visit is 409.
            #expect(try await api.call("DELETE", "/v1/customers/\(customer)", key: api.dispatcher).status == 403)
            #expect(try await api.call("DELETE", "/v1/customers/\(uniqueID("c"))", key: api.ops).status == 404)
            let refused = try await api.call("DELETE", "/v1/customers/\(customer)", key: api.ops)
            #expect(refused.status == 409)
            #expect(refused.errorCode == "customer_has_active_visits")
            #expect(try await api.call("GET", "/v1/visits/\(id)", key: customerKey).status == 200, "nothing was erased")

            #expect(try await api.post(id, #"{"type":"onSite"}"#).status == 201)
            #expect(try await api.post(id, #"{"type":"completed"}"#).status == 201)
            let erased = try await api.call("DELETE", "/v1/customers/\(customer)", key: api.ops)
            #expect(erased.status == 204, "\(erased.text)")

            func checkErased() async throws {
                let visit = try await api.call("GET", "/v1/visits/\(id)", key: api.dispatcher)
                #expect(visit.status == 200)
                for field in ["customerFirstName", "serviceAddress", "jobSummary"] {
                    #expect(attributes(visit)?[field] is NSNull, "\(field) reads null")
                }
                #expect(visit.json?["status"] as? String == "completed", "the rest of the visit stands")
                let list = try await api.call("GET", "/v1/visits?customerId=\(customer)", key: api.dispatcher)
                let listed = (list.json?["visits"] as? [[String: Any]]) ?? []
                #expect(listed.count == 1)
                #expect((listed.first?["attributes"] as? [String: Any])?["serviceAddress"] is NSNull)
                let history = try await api.call("GET", "/v1/visits/\(id)/events", key: api.dispatcher)
                let events = (history.json?["events"] as? [[String: Any]]) ?? []
                #expect(events.count == 3)
                let data = events.first?["data"] as? [String: Any]
                #expect((data?["attributes"] as? [String: Any])?["customerFirstName"] is NSNull)
                #expect(!history.text.contains("Erin") && !history.text.contains("Gone Road"))
                #expect(try await api.call("GET", "/v1/visits/\(id)", key: customerKey).status == 401, "their keys stop working")
                let kept = try await api.call("GET", "/v1/visits/\(otherId)", key: otherKey)
                #expect(kept.status == 200)
                #expect(attributes(kept)?["customerFirstName"] as? String == "Olga", "other customers are untouched")
                #expect(attributes(kept)?["serviceAddress"] as? String == "2 Kept Road")
            }
            try await checkErased()
            let leftovers = try await api.pool.withConnection { c in
                try c.query(
                    """
                    SELECT (SELECT count(*) FROM live_activities WHERE visit_id = \(id)) +
                           (SELECT count(*) FROM api_keys WHERE subject = \(customer)) +
                           (SELECT count(*) FROM personal_data_keys WHERE customer_id = \(customer)) AS n,
                           (SELECT count(*) FROM personal_data_keys WHERE customer_id = \(other)) AS others
                    """
                ).first
            }
            #expect(leftovers?["n"] == "0", "tokens, keys and the data key are gone")
            #expect(leftovers?["others"] == "1")
            // The audit record: who and when, none of the data.
            let audit = try await api.pool.withConnection { c in
                try c.query(
                    "SELECT type, data::text AS data, metadata::text AS metadata FROM events WHERE stream_name = \("customer-" + customer)"
                )
            }
            #expect(audit.count == 1)
            #expect(audit.first?["type"] == "customerErased")
            #expect(audit.first?["metadata"]?.contains("ops") == true)
            #expect(audit.first?["data"]?.contains("Erin") == false)

            // A replay folds the same sealed events: still null, the other customer still readable.
            let replay = VisitReplay(pool: api.pool, readModel: api.environment.readModel)
            _ = try await replay.run()
            try await checkErased()
        }
    }

    /// Every personal value at rest beyond the three attributes — a reason, each kind of push token, the fleet's
    /// APNs JWT — is absent from a `pg_dump` (tokens are found by a keyed hash, not their md5), while the worker
    /// still delivers to each token as registered (opened just before the send).
    @Test func aDumpHoldsNoReasonPushTokenOrProviderTokenAndPushesStillArrive() async throws {
        try await SimulatorDeliveryTests.Harness.with { harness in
            let api = harness.api
            let customer = uniqueID("c")
            let customerKey = try await api.key(.customer, customer)
            let marker = UUID().uuidString.prefix(8).lowercased()
            // Mixed case, as an app may send them: stored and sent lowercase.
            let starter = pushToken("pts-\(marker)").uppercased()
            let notified = pushToken("ntf-\(marker)")
            let activity = pushToken("act-\(marker)")
            func put(_ path: String, _ token: String) async throws {
                let answer = try await api.call(
                    "PUT", path, key: customerKey, json: "{\"pushToken\":\"\(token)\",\"environment\":\"sandbox\"}")
                #expect(answer.status == 204, "\(path): \(answer.text)")
            }
            try await put("/v1/customers/\(customer)/push-to-start-tokens/d-1", starter)
            // Live Activities off on d-2: it follows the visit by ordinary notifications.
            #expect(
                try await api.call(
                    "PUT", "/v1/customers/\(customer)/devices/d-2/preferences", key: customerKey,
                    json: #"{"liveActivitiesEnabled":false,"frequentPushesEnabled":false}"#
                ).status == 204)
            try await put("/v1/customers/\(customer)/devices/d-2/notification-token", notified)
            let id = uniqueID("v")
            #expect(try await api.schedule(id, customer: customer).status == 201)
            try await harness.drain(until: starter.lowercased())
            try await harness.drain(until: notified)
            func storedActivityToken() async throws -> String? {
                try await api.pool.withConnection { c in
                    try c.query("SELECT push_token FROM live_activities WHERE visit_id = \(id)").first?["push_token"]
                }
            }
            try await put("/v1/visits/\(id)/live-activities/a-1", activity)
            let sealedOnce = try await storedActivityToken()
            // The same token again is the same registration (found by its keyed hash): its sealed form is kept.
            try await put("/v1/visits/\(id)/live-activities/a-1", activity.uppercased())
            #expect(try await storedActivityToken() == sealedOnce)
            #expect(try await api.post(id, #"{"type":"enRoute","kilometresAway":7}"#).status == 201)
            try await harness.drain(until: activity)
            let start = try #require(harness.delivered(to: starter.lowercased()).first)
            #expect(start.status == 200 && start.aps?["event"]?.stringValue == "start")
            #expect(harness.delivered(to: activity).allSatisfy { $0.status == 200 })
            let reason = "Moved\(marker)away"
            #expect(try await api.post(id, #"{"type":"cancelled","reason":"\#(reason)"}"#).status == 201)

            // The fleet's JWT, as `serve` keeps it.
            let signer = ProviderTokenSigner(
                key: try APNsSigningKey(pem: Array(try SimulatorDeliveryTests.signingKeyPEM().utf8)),
                keyId: SimulatorDeliveryTests.keyID, teamId: SimulatorDeliveryTests.teamID)
            let jwt = try signer.mint(issuedAt: Int64(Date().timeIntervalSince1970))
            _ = try await PostgresProviderTokenStore(pool: api.pool, signer: signer).compareAndSet(expected: nil, new: jwt)

            let rows = try await api.pool.withConnection { c in
                try c.query(
                    """
                    SELECT (SELECT token_hash FROM push_to_start_tokens WHERE customer_id = \(customer)) AS start_hash,
                           (SELECT push_token FROM live_activities WHERE visit_id = \(id)) AS activity_token,
                           md5(\(starter.lowercased())) AS start_md5
                    """
                ).first
            }
            #expect(rows?["activity_token"]?.hasPrefix(SealedText.prefix) == true, "the token is sealed")
            #expect(rows?["start_hash"]?.count == 64 && rows?["start_hash"] != rows?["start_md5"], "a keyed hash, not md5")
            let dump = try await PersonalDataTests.dump(api.databaseURL)
            for (what, value) in [
                ("the reason", reason), ("the push-to-start token", starter.lowercased()),
                ("the push-to-start token as registered", starter), ("the notification token", notified),
                ("the activity token", activity), ("the provider JWT", jwt.jwt),
                ("the JWT's signature", String(jwt.jwt.split(separator: ".").last!)),
                ("the push-to-start token's md5", rows?["start_md5"] ?? "-"),
            ] {
                #expect(!dump.contains(value), "\(what) is in the dump")
            }

            // APNs refuses the activity's token: the worker retires it by what it claimed (the sealed form).
            let other = uniqueID("v")
            #expect(try await api.schedule(other, customer: customer).status == 201)
            try await put("/v1/visits/\(other)/live-activities/a-2", activity)
            harness.simulator.markUnregistered(token: activity)
            #expect(try await api.post(other, #"{"type":"enRoute","kilometresAway":3}"#).status == 201)
            try await eventually("the refused token retired", pollingEvery: 0.025) {
                _ = try await harness.worker.runOnce()
                return try await api.pool.withConnection { c in
                    try c.query(
                        """
                        SELECT retired_reason FROM live_activities
                        WHERE visit_id = \(other) AND activity_id = 'a-2' AND retired_at_ms IS NOT NULL
                        """
                    ).first?["retired_reason"] == "unregistered"
                }
            }
        }
    }

    /// A failed visit shows its reason as `vanDescription`; once the customer is erased the reason reads `null`
    /// everywhere and the visit shows the technician's van again, also after a replay.
    @Test func aFailedVisitsReasonIsSealedAndAfterErasureItsVanShows() async throws {
        try await withAPIServer { api in
            let customer = uniqueID("c")
            let id = uniqueID("v")
            let reason = "Dog\(UUID().uuidString.prefix(8))loose"
            #expect(
                try await api.call(
                    "POST", "/v1/visits", key: api.dispatcher,
                    json: PersonalDataTests.visitJSON(id, customer: customer, name: "Fay", address: "6 Fail St", job: "Vent")
                ).status == 201)
            // An activity, so that the failure's end push (its content state showing the reason) is queued.
            #expect(
                try await api.call(
                    "PUT", "/v1/visits/\(id)/live-activities/a-1", key: try await api.key(.customer, customer),
                    json: "{\"pushToken\":\"\(pushToken(id))\",\"environment\":\"sandbox\",\"version\":1}"
                ).status == 204)
            #expect(try await api.post(id, #"{"type":"onSite"}"#).status == 201)
            let failed = try await api.post(id, #"{"type":"failed","reason":"\#(reason)"}"#)
            #expect(failed.status == 201, "\(failed.text)")
            func van(_ answer: RawResponse) -> Any? { (answer.json?["contentState"] as? [String: Any])?["vanDescription"] }
            #expect(van(failed) as? String == reason, "the reason shows as the van's description")
            #expect(van(try await api.call("GET", "/v1/visits/\(id)", key: api.dispatcher)) as? String == reason)
            let stored = try await api.pool.withConnection { c in
                try c.query(
                    """
                    SELECT (SELECT string_agg(data::text, ' ') FROM events WHERE stream_name LIKE '%' || \(id)) || ' ' ||
                           (SELECT state FROM visits WHERE visit_id = \(id)) || ' ' ||
                           (SELECT string_agg(body, ' ') FROM deliveries WHERE visit_id = \(id) AND kind = 'end') AS text
                    """
                ).first?["text"]
            }
            #expect(stored?.contains(SealedText.prefix) == true)
            #expect(stored?.contains(reason) == false, "the reason is in plain text at rest")

            #expect(try await api.call("DELETE", "/v1/customers/\(customer)", key: api.ops).status == 204)
            func checkErased() async throws {
                let visit = try await api.call("GET", "/v1/visits/\(id)", key: api.dispatcher)
                #expect(visit.json?["status"] as? String == "failed")
                #expect(van(visit) as? String == "White van", "after erasure the technician's van shows")
                let history = try await api.call("GET", "/v1/visits/\(id)/events", key: api.dispatcher)
                let events = (history.json?["events"] as? [[String: Any]]) ?? []
                #expect((events.last?["data"] as? [String: Any])?["reason"] is NSNull, "the reason reads null")
                #expect(!history.text.contains(reason) && !visit.text.contains(reason))
            }
            try await checkErased()
            _ = try await VisitReplay(pool: api.pool, readModel: api.environment.readModel).run()
            try await checkErased()
        }
    }

    @Test func aTamperedCiphertextReadsAsErasedForThatVisitAlone() async throws {
        try await withAPIServer { api in
            let customer = uniqueID("c")
            let id = uniqueID("v")
            let otherId = uniqueID("v")
            for visit in [id, otherId] {
                #expect(
                    try await api.call(
                        "POST", "/v1/visits", key: api.dispatcher,
                        json: PersonalDataTests.visitJSON(
                            visit, customer: customer, name: "Tess", address: "3 Flip St", job: "Gas")
                    ).status == 201)
            }
            // Change one character of the sealed name in the read model's state, which the view is drawn from (the
            // bytes an attacker with the database, or a damaged disk, would change).
            try await api.pool.withConnection { c in
                let state = try c.query("SELECT state FROM visits WHERE visit_id = \(id)").first!.string("state")
                let range = state.range(of: SealedText.prefix)!
                let start = state.index(range.upperBound, offsetBy: 30)
                let flipped = state[start] == "A" ? "B" : "A"
                let changed = state.replacingCharacters(in: start...start, with: flipped)
                try c.query("UPDATE visits SET state = \(changed) WHERE visit_id = \(id)")
            }
            let failed = try await api.call("GET", "/v1/visits/\(id)", key: api.dispatcher)
            #expect(failed.status == 200)
            #expect(attributes(failed)?["customerFirstName"] is NSNull, "the changed field reads as erased")
            #expect(!failed.text.contains(SealedText.prefix), "no sealed text in the answer")
            let fine = try await api.call("GET", "/v1/visits/\(otherId)", key: api.dispatcher)
            #expect(fine.status == 200)
            #expect(attributes(fine)?["customerFirstName"] as? String == "Tess")
            // Its history (the events are intact) still answers.
            #expect(try await api.call("GET", "/v1/visits/\(id)/events", key: api.dispatcher).status == 200)
        }
    }

    /// `livevisits keys rotate-personal-data`: every data key rewrapped under the new file, online; a process
    /// still on the old file reads on (the kept previous wrap) until the previous wraps are forgotten.
    @Test func rotationRewrapsEveryDataKeyWhileTheOldFileStillReads() async throws {
        let old = try PersonalDataTests.keyFile()
        let new = try PersonalDataTests.keyFile()
        try await withAPIServer(personalData: PersonalDataKeys(current: old.key)) { oldAPI in
            var ids: [String] = []
            for n in 0..<5 {
                let id = uniqueID("v")
                ids.append(id)
                #expect(
                    try await oldAPI.call(
                        "POST", "/v1/visits", key: oldAPI.dispatcher,
                        json: PersonalDataTests.visitJSON(
                            id, customer: uniqueID("c"), name: "Rita\(n)", address: "4 Turn St", job: "Key")
                    ).status == 201)
            }
            let rotation = try await PersonalDataKeys(current: old.key).rotate(to: new.key, pool: oldAPI.pool, batchSize: 2)
            #expect(rotation.rewrapped == 5)
            #expect(rotation.batches == 3, "batches of at most 2")
            let wraps = try await oldAPI.pool.withConnection { c in
                try c.query("SELECT DISTINCT wrapping_key_id AS w FROM personal_data_keys").rows.map { try $0.string("w") }
            }
            #expect(wraps == [new.key.id])
            #expect(try await PersonalDataKeys(current: old.key).rotate(to: new.key, pool: oldAPI.pool).rewrapped == 0)

            try await withAPIServer(
                databaseURL: oldAPI.databaseURL, personalData: PersonalDataKeys(current: new.key, previous: [old.key])
            ) { newAPI in
                for (n, id) in ids.enumerated() {
                    for api in [oldAPI, newAPI] {
                        let visit = try await api.call("GET", "/v1/visits/\(id)", key: api.dispatcher)
                        #expect(attributes(visit)?["customerFirstName"] as? String == "Rita\(n)")
                    }
                }
                // A customer made by the new process is readable by an old one until the switch is complete.
                let late = uniqueID("v")
                #expect(
                    try await newAPI.call(
                        "POST", "/v1/visits", key: newAPI.dispatcher,
                        json: PersonalDataTests.visitJSON(
                            late, customer: uniqueID("c"), name: "Lena", address: "5 Turn St", job: "Key")
                    ).status == 201)
                #expect(
                    attributes(try await oldAPI.call("GET", "/v1/visits/\(late)", key: oldAPI.dispatcher))?["customerFirstName"]
                        as? String == "Lena")

                #expect(try await PersonalDataKeys.forgetPreviousWraps(pool: oldAPI.pool) == 6)
                let unreadable = try await oldAPI.call("GET", "/v1/visits/\(ids[0])", key: oldAPI.dispatcher)
                #expect(attributes(unreadable)?["customerFirstName"] is NSNull, "the old file alone no longer opens anything")
                let readable = try await newAPI.call("GET", "/v1/visits/\(ids[0])", key: newAPI.dispatcher)
                #expect(attributes(readable)?["customerFirstName"] as? String == "Rita0")
                let dump = try await PersonalDataTests.dump(oldAPI.databaseURL)
                #expect(!dump.contains(old.key.id), "no wrap under the old file is left")
            }
        }
    }

    @Test func keyFilesOfTheWrongSizeOrUnreadableAreRefusedNamingTheVariable() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("lv-pd-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        let short = dir.appendingPathComponent("short.key").path
        FileManager.default.createFile(atPath: short, contents: Data(repeating: 7, count: 31))
        #expect {
            try WrappingKey.load(path: short, origin: "LIVEVISITS_PERSONAL_DATA_KEY_FILE")
        } throws: { "\($0)".contains("LIVEVISITS_PERSONAL_DATA_KEY_FILE") && "\($0)".contains("31 bytes") }
        #expect {
            try WrappingKey.load(
                path: dir.appendingPathComponent("missing.key").path, origin: "LIVEVISITS_PERSONAL_DATA_KEY_FILE")
        } throws: { "\($0)".contains("LIVEVISITS_PERSONAL_DATA_KEY_FILE") && "\($0)".contains("cannot read") }
        let good = try PersonalDataTests.keyFile()
        #expect(try WrappingKey.load(path: good.path, origin: "x") == good.key)
    }
}
