import Foundation
import Postgres
import TestSupport
import Testing
import VisitCommands
import VisitDomain
import VisitProjections
import VisitTestSupport

/// A page of visits read through `VisitRowCache` is the page read without it, whatever changed in between: an
/// event, or a row rewritten at the same version (a replay under other rules).
@Suite(.serialized, .timeLimit(.minutes(2))) struct VisitRowCacheTests {
    private static func page(_ f: VisitFixtures, cache: VisitRowCache?) async throws -> [VisitReadModel.Row] {
        try await f.pool.withConnection { c in try VisitReadModel.list(.init(limit: 50), on: c, cache: cache) }
    }

    @Test func aPageThroughTheCacheIsThePageReadAfresh() async throws {
        try await VisitFixtures.with { f in
            for id in ["v-r1", "v-r2", "v-r3"] { _ = try await f.schedule(id) }
            let cache = VisitRowCache()
            let first = try await Self.page(f, cache: cache)
            #expect(first.count == 3)
            #expect(first == (try await Self.page(f, cache: nil)))
            #expect(cache.hitsAndMisses == (hits: 0, misses: 3))
            #expect(try await Self.page(f, cache: cache) == first)
            #expect(cache.hitsAndMisses == (hits: 3, misses: 3), "the second read decodes nothing")

            // An event: that visit's row is decoded again, the others are not.
            try await f.post("v-r2", #"{"type": "enRoute"}"#)
            let afterEvent = try await Self.page(f, cache: cache)
            #expect(afterEvent == (try await Self.page(f, cache: nil)))
            #expect(afterEvent.first { $0.visitId == "v-r2" }?.status == "enRoute")
            #expect(afterEvent.first { $0.visitId == "v-r2" }?.view.contains(#""status":"enRoute""#) == true)
            #expect(cache.hitsAndMisses == (hits: 5, misses: 4))

            // Rewritten at the same version: a ruled column, then the stored state itself.
            try await f.pool.withConnection { c in
                try c.execute(script: "UPDATE visits SET relevance_score = relevance_score + 7 WHERE visit_id = 'v-r1'")
                try c.execute(
                    script: """
                        UPDATE visits SET state = jsonb_set(state::jsonb, '{technician,name}', '"Kim"')::text
                        WHERE visit_id = 'v-r3'
                        """)
            }
            let rewritten = try await Self.page(f, cache: cache)
            #expect(rewritten == (try await Self.page(f, cache: nil)))
            #expect(rewritten.first { $0.visitId == "v-r1" } != afterEvent.first { $0.visitId == "v-r1" })
            let kim = rewritten.first { $0.visitId == "v-r3" }?.view ?? ""
            #expect(kim.contains(#""Kim""#), "\(kim)")

            // Text Swift's `==` calls equal but stored in other bytes (é composed, then decomposed) is drawn again.
            for name in ["Zo\u{E9}", "Zoe\u{301}"] {
                try await f.pool.withConnection { c in
                    try c.query(
                        """
                        UPDATE visits SET state = jsonb_set(state::jsonb, '{technician,name}', to_jsonb(\(name)::text))::text
                        WHERE visit_id = 'v-r3'
                        """)
                }
                let view = try await Self.page(f, cache: cache).first { $0.visitId == "v-r3" }?.view ?? ""
                let fresh = try await Self.page(f, cache: nil).first { $0.visitId == "v-r3" }?.view ?? ""
                #expect(Array(view.utf8) == Array(fresh.utf8))
                #expect(view.utf8.count == fresh.utf8.count && fresh.contains(name))
            }
        }
    }

    @Test func aFullCacheStartsAgain() async throws {
        try await VisitFixtures.with { f in
            for id in ["v-f1", "v-f2", "v-f3"] { _ = try await f.schedule(id) }
            let cache = VisitRowCache(capacity: 2)
            let first = try await Self.page(f, cache: cache)
            #expect(try await Self.page(f, cache: cache) == first)
            #expect(first == (try await Self.page(f, cache: nil)))
        }
    }
}
