import Foundation
import Runtime
import Testing

/// `GET /v1/visits`: role scoping, filters that only narrow, and cursor paging.
@Suite(.timeLimit(.minutes(5))) struct VisitListTests {
    func ids(_ answer: RawResponse) -> [String] {
        (answer.json?["visits"] as? [[String: Any]] ?? []).compactMap { $0["visitId"] as? String }
    }

    @Test func pagingWalksEveryVisitOnce() async throws {
        try await withAPIServer { api in
            var scheduled: Set<String> = []
            for _ in 0..<7 {
                let id = uniqueID("v")
                try await api.schedule(id, customer: "c-1")
                scheduled.insert(id)
            }
            var seen: [String] = []
            var cursor: String? = nil
            var pages = 0
            repeat {
                let path = "/v1/visits?limit=3" + (cursor.map { "&cursor=\($0)" } ?? "")
                let page = try await api.call("GET", path, key: api.dispatcher)
                #expect(page.status == 200)
                seen += ids(page)
                cursor = page.json?["nextCursor"] as? String
                pages += 1
            } while cursor != nil && pages < 10
            #expect(pages == 3)
            #expect(seen.count == 7)
            #expect(Set(seen) == scheduled)
            let bad = try await api.call("GET", "/v1/visits?cursor=%21%21not-ours", key: api.dispatcher)
            #expect(bad.status == 400)
            #expect(try await api.call("GET", "/v1/visits?limit=0", key: api.dispatcher).status == 422)
            #expect(try await api.call("GET", "/v1/visits?limit=abc", key: api.dispatcher).status == 422)
        }
    }

    @Test func filtersOnlyNarrowWhatTheCallerMaySee() async throws {
        try await withAPIServer { api in
            let a = uniqueID("v")
            let b = uniqueID("v")
            let c = uniqueID("v")
            try await api.schedule(a, customer: "c-1", technician: "t-1")
            try await api.schedule(b, customer: "c-2", technician: "t-1")
            try await api.schedule(c, customer: "c-2", technician: "t-2")
            try await api.post(c, #"{"type":"cancelled","reason":"x"}"#)
            let customer = try await api.key(.customer, "c-2")
            let technician = try await api.key(.technician, "t-1")

            #expect(Set(ids(try await api.call("GET", "/v1/visits", key: customer))) == [b, c])
            #expect(ids(try await api.call("GET", "/v1/visits?customerId=c-1", key: customer)) == [])
            #expect(ids(try await api.call("GET", "/v1/visits?status=ended", key: customer)) == [c])
            #expect(ids(try await api.call("GET", "/v1/visits?status=active", key: customer)) == [b])
            #expect(Set(ids(try await api.call("GET", "/v1/visits", key: technician))) == [a, b])
            #expect(ids(try await api.call("GET", "/v1/visits?technicianId=t-2", key: technician)) == [])
            #expect(ids(try await api.call("GET", "/v1/visits?customerId=c-2", key: technician)) == [b])
            #expect(Set(ids(try await api.call("GET", "/v1/visits?customerId=c-2", key: api.dispatcher))) == [b, c])
            #expect(Set(ids(try await api.call("GET", "/v1/visits?technicianId=t-1", key: api.ops))) == [a, b])
        }
    }

    /// Visits booked within one second (here: a clock that stands still) list newest booking first, not in
    /// id order, and a page boundary between them neither skips nor repeats one.
    @Test func visitsBookedInTheSameSecondListNewestBookingFirst() async throws {
        try await withAPIServer(clock: ManualClock(now: Date().timeIntervalSince1970.rounded(.down))) { api in
            let customer = uniqueID("c")
            let prefix = uniqueID("v")
            // Booked in this order; their ids sort otherwise.
            let booked = ["\(prefix)-b", "\(prefix)-c", "\(prefix)-a", "\(prefix)-d"]
            for id in booked {
                #expect(try await api.schedule(id, customer: customer).status == 201)
            }
            let newestFirst = Array(booked.reversed())
            #expect(ids(try await api.call("GET", "/v1/visits?customerId=\(customer)", key: api.dispatcher)) == newestFirst)
            var paged: [String] = []
            var cursor: String? = nil
            for _ in 0..<10 {
                let path = "/v1/visits?customerId=\(customer)&limit=1" + (cursor.map { "&cursor=\($0)" } ?? "")
                let page = try await api.call("GET", path, key: api.dispatcher)
                #expect(page.status == 200)
                paged += ids(page)
                cursor = page.json?["nextCursor"] as? String
                if cursor == nil { break }
            }
            #expect(paged == newestFirst)
        }
    }
}
