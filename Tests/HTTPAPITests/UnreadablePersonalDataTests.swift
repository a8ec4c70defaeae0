import Foundation
import PersonalData
import Postgres
import TestSupport
import Testing

/// Personal data this process cannot open — its data key wrapped under another key file, the file missing —
/// never fails an answer: the fields read `null` as an erased customer's and are counted; `/readyz` says
/// when the key file does not open the database's data keys, also when that happens while running.
@Suite(.timeLimit(.minutes(5))) struct UnreadablePersonalDataTests {
    func attributes(_ value: Any?) -> [String: Any]? { (value as? [String: Any])?["attributes"] as? [String: Any] }

    @Test func aListWithOneUnreadableRowAnswersTheOthersAndNullsThatOne() async throws {
        let fileA = try PersonalDataTests.keyFile()
        let fileB = try PersonalDataTests.keyFile()
        try await withAPIServer(personalData: PersonalDataKeys(current: fileA.key)) { a in
            try await withAPIServer(databaseURL: a.databaseURL, personalData: PersonalDataKeys(current: fileB.key)) { b in
                // One customer's data key wrapped under A's file, the other's under B's: B cannot open the first.
                let lost = uniqueID("v")
                let lostCustomer = uniqueID("c")
                let kept = uniqueID("v")
                for (api, visit, customer, name) in [(a, lost, lostCustomer, "Lost"), (b, kept, uniqueID("c"), "Kept")] {
                    let booked = try await api.call(
                        "POST", "/v1/visits", key: api.dispatcher,
                        json: PersonalDataTests.visitJSON(visit, customer: customer, name: name, address: "6 Row St", job: "Fix"))
                    #expect(booked.status == 201)
                }

                let list = try await b.call("GET", "/v1/visits", key: b.dispatcher)
                #expect(list.status == 200, "one unreadable row does not fail the list: \(list.text)")
                let visits = try #require(list.json?["visits"] as? [[String: Any]])
                let byId = Dictionary(uniqueKeysWithValues: visits.map { ($0["visitId"] as? String ?? "", $0) })
                for field in ["customerFirstName", "serviceAddress", "jobSummary"] {
                    #expect(attributes(byId[lost])?[field] is NSNull, "\(field) of the unreadable row reads null")
                }
                #expect(attributes(byId[kept])?["customerFirstName"] as? String == "Kept")
                #expect(!list.text.contains(SealedText.prefix), "no sealed text leaks")

                // A single visit reads as erased too, and A (holding the right file) still reads it.
                let single = try await b.call("GET", "/v1/visits/\(lost)", key: b.dispatcher)
                #expect(single.status == 200)
                #expect(attributes(single.json)?["customerFirstName"] is NSNull)
                let fromA = try await a.call("GET", "/v1/visits/\(lost)", key: a.dispatcher)
                #expect(attributes(fromA.json)?["customerFirstName"] as? String == "Lost")

                // Counted once per visit read: the list and the single GET.
                let metrics = try await b.call("GET", "/metrics", key: nil).text
                #expect(metrics.contains("livevisits_personal_data_unreadable_total 2"), "\(metrics)")
                #expect(
                    !(try await a.call("GET", "/metrics", key: nil).text).contains("livevisits_personal_data_unreadable_total"))

                // A booking that must seal under that customer's key fails alone, with the typed error.
                let again = try await b.call(
                    "POST", "/v1/visits", key: b.dispatcher,
                    json: PersonalDataTests.visitJSON(
                        uniqueID("v"), customer: lostCustomer, name: "Lost", address: "6 Row St", job: "Fix"))
                #expect(again.status == 500)
                #expect(again.errorCode == "personal_data_unreadable")
                #expect(!again.text.contains("Lost"), "no data in the error")
            }
        }
    }

    @Test func readyzNamesAMissingOrWrongKeyFileAlsoWhenItArisesWhileRunning() async throws {
        let right = try PersonalDataTests.keyFile()
        try await withAPIServer(personalData: PersonalDataKeys(current: right.key)) { api in
            // No data key yet: any key file (or none) is ready.
            #expect(try await api.call("GET", "/readyz", key: nil).status == 200)
            let booked = try await api.call(
                "POST", "/v1/visits", key: api.dispatcher,
                json: PersonalDataTests.visitJSON(
                    uniqueID("v"), customer: uniqueID("c"), name: "Ready", address: "7 Row St", job: "Fix"))
            #expect(booked.status == 201)
            let ready = try await api.call("GET", "/readyz", key: nil)
            #expect(ready.status == 200)
            #expect((ready.json?["checks"] as? [String: Any])?["personalDataKey"] as? String == "opens")

            let other = try PersonalDataTests.keyFile()
            let cases: [(PersonalDataKeys, String)] = [
                (PersonalDataKeys(current: nil), "personal_data_key_missing"),
                (PersonalDataKeys(current: other.key), "personal_data_key_wrong"),
            ]
            for (keys, code) in cases {
                let answer = try await withAPIServer(databaseURL: api.databaseURL, personalData: keys) {
                    try await $0.call("GET", "/readyz", key: nil)
                }
                #expect(answer.status == 503)
                #expect(answer.errorCode == code)
                #expect(answer.text.contains("LIVEVISITS_PERSONAL_DATA_KEY_FILE"), "\(answer.text)")
                #expect(answer.text.contains(right.key.id), "names the wrapping key the data keys need: \(answer.text)")
                #expect((answer.json?["checks"] as? [String: Any])?["personalDataKey"] as? String == code)
            }

            // While running: the data keys are rotated to another file and the old wraps forgotten.
            let next = try PersonalDataTests.keyFile()
            _ = try await PersonalDataKeys(current: right.key).rotate(to: next.key, pool: api.pool)
            #expect(try await api.call("GET", "/readyz", key: nil).status == 200, "the kept previous wrap still opens")
            _ = try await PersonalDataKeys.forgetPreviousWraps(pool: api.pool)
            let stale = try await api.call("GET", "/readyz", key: nil)
            #expect(stale.status == 503)
            #expect(stale.errorCode == "personal_data_key_wrong")
            #expect(stale.text.contains(next.key.id), "\(stale.text)")
        }
    }
}
