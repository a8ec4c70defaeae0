import Foundation
import Postgres
import TestSupport
import Testing

@testable import PersonalData

/// The data-key cache of `serve` (`PersonalDataKeyCache`): an answer's key is read once, an erasure in any
/// process empties every process's cache at once through LISTEN/NOTIFY, and without the listener nothing
/// cached is used.
@Suite(.serialized, .timeLimit(.minutes(5))) struct DataKeyCacheTests {
    func firstName(_ answer: RawResponse) -> Any? {
        (answer.json?["attributes"] as? [String: Any])?["customerFirstName"]
    }

    @Test func anErasureInOneProcessNullsTheFieldsInAnotherAtOnce() async throws {
        let file = try PersonalDataTests.keyFile()
        let keys = PersonalDataKeys(current: file.key)
        // Times to live far longer than the test: only the notification can end the cached entries.
        let cacheA = PersonalDataKeyCache(timeToLive: .seconds(600))
        let cacheB = PersonalDataKeyCache(timeToLive: .seconds(600))
        try await withAPIServer(personalData: keys, dataKeyCache: cacheA, listenForErasures: true) { a in
            try await withAPIServer(
                databaseURL: a.databaseURL, personalData: keys, dataKeyCache: cacheB, listenForErasures: true
            ) { b in
                try await eventually("both caches listening for erasures") { cacheA.isActive && cacheB.isActive }

                let customer = uniqueID("c")
                let other = uniqueID("c")
                let id = uniqueID("v")
                let otherId = uniqueID("v")
                for (visit, who, name) in [(id, customer, "Erin"), (otherId, other, "Olga")] {
                    #expect(
                        try await a.call(
                            "POST", "/v1/visits", key: a.dispatcher,
                            json: PersonalDataTests.visitJSON(
                                visit, customer: who, name: name, address: "1 Cache Row", job: "Leak")
                        ).status == 201)
                }
                for visit in [id, otherId] {
                    #expect(try await b.call("GET", "/v1/visits/\(visit)", key: b.dispatcher).status == 200)
                }
                #expect(firstName(try await b.call("GET", "/v1/visits/\(id)", key: b.dispatcher)) as? String == "Erin")
                #expect(cacheB.count == 2, "B remembers both customers' keys")
                #expect(try await a.post(id, #"{"type":"cancelled","reason":"moved"}"#).status == 201)

                #expect(try await a.call("DELETE", "/v1/customers/\(customer)", key: a.ops).status == 204)
                #expect(
                    firstName(try await a.call("GET", "/v1/visits/\(id)", key: a.dispatcher)) is NSNull,
                    "the erasing process forgets at its commit")
                try await eventually("the other process answers null") {
                    firstName(try await b.call("GET", "/v1/visits/\(id)", key: b.dispatcher)) is NSNull
                }
                let list = try await b.call("GET", "/v1/visits?customerId=\(customer)", key: b.dispatcher)
                let listed = (list.json?["visits"] as? [[String: Any]]) ?? []
                #expect((listed.first?["attributes"] as? [String: Any])?["serviceAddress"] is NSNull)
                let history = try await b.call("GET", "/v1/visits/\(id)/events", key: b.dispatcher)
                #expect(!history.text.contains("Erin") && !history.text.contains("Cache Row"))
                #expect(cacheB.count == 1, "only the other customer's key is left")
                #expect(firstName(try await b.call("GET", "/v1/visits/\(otherId)", key: b.dispatcher)) as? String == "Olga")
            }
        }
    }

    @Test func aBookingIsAnsweredWithTheKeyItsWriteMadeWithoutReadingIt() async throws {
        let file = try PersonalDataTests.keyFile()
        let cache = PersonalDataKeyCache(timeToLive: .seconds(600))
        try await withAPIServer(
            personalData: PersonalDataKeys(current: file.key), dataKeyCache: cache, listenForErasures: true
        ) { api in
            try await eventually("the cache listening for erasures") { cache.isActive }
            let before = cache.queriesMade.load(ordering: .relaxed)
            for (n, name) in ["Ada", "Bea", "Cy"].enumerated() {
                let booked = try await api.call(
                    "POST", "/v1/visits", key: api.dispatcher,
                    json: PersonalDataTests.visitJSON(
                        uniqueID("v"), customer: uniqueID("c"), name: name, address: "\(n) Key Lane", job: "Boiler"))
                #expect(booked.status == 201)
                #expect(firstName(booked) as? String == name, "the answer shows the customer's name opened")
            }
            #expect(cache.count == 3, "each new customer's key is remembered as its booking commits")
            #expect(
                cache.queriesMade.load(ordering: .relaxed) == before,
                "no answer read a key: each was made by its booking's own write")
        }
    }

    @Test func withTheListenerDownTheCacheIsNotUsed() async throws {
        let file = try PersonalDataTests.keyFile()
        let cache = PersonalDataKeyCache(timeToLive: .seconds(600))
        try await withAPIServer(personalData: PersonalDataKeys(current: file.key), dataKeyCache: cache) { api in
            let customer = uniqueID("c")
            let id = uniqueID("v")
            #expect(
                try await api.call(
                    "POST", "/v1/visits", key: api.dispatcher,
                    json: PersonalDataTests.visitJSON(id, customer: customer, name: "Lou", address: "2 Quiet St", job: "Tap")
                ).status == 201)

            // No listener yet: nothing is remembered.
            #expect(firstName(try await api.call("GET", "/v1/visits/\(id)", key: api.dispatcher)) as? String == "Lou")
            #expect(!cache.isActive)
            #expect(cache.count == 0)

            let listener = cache.listener(url: api.databaseURL)
            let listening = Task { try await listener.run() }
            try await eventually("the cache listening for erasures") { cache.isActive }
            #expect(firstName(try await api.call("GET", "/v1/visits/\(id)", key: api.dispatcher)) as? String == "Lou")
            #expect(cache.count == 1)
            // The key goes without a notification: while the listener is up, the cached key still answers…
            _ = try await api.pool.withConnection { c in
                try c.query("DELETE FROM personal_data_keys WHERE customer_id = \(customer)")
            }
            #expect(
                firstName(try await api.call("GET", "/v1/visits/\(id)", key: api.dispatcher)) as? String == "Lou",
                "the cache is used while its listener is up")
            // …and once the listener is down, the cache is not used: the database says the key is gone.
            listening.cancel()
            try await listening.value
            #expect(!cache.isActive)
            #expect(firstName(try await api.call("GET", "/v1/visits/\(id)", key: api.dispatcher)) is NSNull)
            // A new listener does not trust what was cached before it.
            let again = cache.listener(url: api.databaseURL)
            let relistening = Task { try await again.run() }
            defer { relistening.cancel() }
            #expect(cache.count == 0)
        }
    }
}
