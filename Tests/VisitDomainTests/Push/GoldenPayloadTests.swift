import Foundation
import Testing

@testable import VisitDomain

/// The three payloads of seed 000 "Server payloads", produced from the matching events.
///
/// History: scheduled at 1789990000 (window 1790000300–1790000900, 14 km), nearby at
/// 1790000000 (1.2 km), onSite at 1790000300, completed at 1790004000.
@Suite(.timeLimit(.minutes(2))) struct GoldenPayloadTests {
    static let history: [(VisitEvent, Int)] = [
        (TestVisit.scheduled(), 1_789_990_000),
        (.nearby(ArrivalUpdate(kilometresAway: 1.2)), 1_790_000_000),
        (.onSite, 1_790_000_300),
        (.completed, 1_790_004_000),
    ]

    /// The pushes the `n`th event of the history implies under `rules`.
    func pushes(afterEvent count: Int, rules: ProjectionRules) throws -> [PushPlan] {
        let state = try TestVisit.fold(Array(Self.history.prefix(count)))
        return PushPlanner.pushes(for: state, rules: rules)
    }

    func seed(_ name: String) throws -> JSONValue { try JSONValue.parse(TestVisit.fixture(name)) }

    @Test func updateMatchesTheSeedExactly() throws {
        // The seed's update JSON goes stale after 600 s (its code says 120 s): the rules file is
        // data, so the fixture loads rules with a 600 s nearby interval. No other difference.
        let url = try #require(Bundle.module.url(forResource: "Fixtures/rules-stale-600", withExtension: "json"))
        let rules = try ProjectionRules.parse(Data(contentsOf: url))
        #expect(rules.rule(for: .nearby).staleAfterSeconds == 600)
        let plans = try pushes(afterEvent: 2, rules: rules)
        #expect(plans.map(\.audience) == [.liveActivities, .pendingStarts])  // the waiting start re-planned too
        let update = try #require(plans.first)
        #expect(update.kind == .update)
        #expect(update.priority == 10)  // it carries an alert
        #expect(update.expiration == .at(1_790_000_600))
        let ours = try JSONValue.parse(update.body)
        let expected = try seed("seed-update.json")
        #expect(ours == expected)
        // Same keys in the same order, same JSON types: byte-identical once both are compact.
        #expect(update.body == expected.serialized())
    }

    @Test func endMatchesTheSeedExactly() throws {
        let plans = try pushes(afterEvent: 4, rules: .contractDefault)
        let end = try #require(plans.first)
        // Besides the end, only the fallback notification for devices without a Live Activity (§9).
        #expect(plans.map(\.kind) == [.end, .alert])
        #expect(end.kind == .end)
        #expect(end.priority == 10)
        #expect(end.expiration == .afterSending(seconds: 14_400))
        let expected = try seed("seed-end.json")
        #expect(try JSONValue.parse(end.body) == expected)
        #expect(end.body == expected.serialized())
    }

    @Test func startMatchesTheSeedButForTheContractsAdditions() throws {
        let plans = try pushes(afterEvent: 1, rules: .contractDefault)
        let start = try #require(plans.first { $0.kind == .start })
        #expect(start.audience == .pushToStartTokens)
        #expect(start.priority == 10)
        var ours = try JSONValue.parse(start.body)

        // Every remaining difference from the seed, each justified by the contract:
        // 1. §5: "`start` also carries `"input-push-token": 1` so that the started activity
        //    reports its update token (iOS 18+)".
        #expect(ours.removing(["aps", "input-push-token"]) == .number(1))
        // 2. §5: "`attributes` with the three static fields of the seed plus `visitId`".
        #expect(ours.removing(["aps", "attributes", "visitId"]) == .string("v-1001"))
        // 3. §5: "A start may also carry `stale-date` and `relevance-score` from the rules (the
        //    seed's example omits them)"; scheduled goes stale at the later of the window's
        //    start (1790000300) and recorded time + 120 s (1789990120).
        #expect(ours.removing(["aps", "stale-date"]) == .number(1_790_000_300))
        #expect(ours.removing(["aps", "relevance-score"]) == .number(80))

        let expected = try seed("seed-start.json")
        #expect(ours == expected)
        #expect(ours.serialized() == expected.serialized())
    }

    @Test func bodiesAreValidJSONForFoundationToo() throws {
        for count in 1...4 {
            for plan in try pushes(afterEvent: count, rules: .contractDefault) where plan.kind != .alert {
                let object = try #require(try JSONSerialization.jsonObject(with: Data(plan.body)) as? [String: Any])
                let aps = try #require(object["aps"] as? [String: Any])
                let content = try #require(aps["content-state"] as? [String: Any])
                #expect(
                    Set(content.keys) == [
                        "technicianName", "avatarSymbol", "vanDescription", "arrivalStartEpoch", "arrivalEndEpoch",
                        "status", "kilometresAway",
                    ])
                #expect(content["kilometresAway"] is NSNumber)
                #expect(content["status"] is String)
            }
        }
    }
}

extension JSONValue {
    /// Removes the member at `path` from nested objects and returns its value.
    mutating func removing(_ path: [String]) -> JSONValue? {
        guard case .object(var members) = self, let key = path.first,
            let index = members.firstIndex(where: { $0.key == key })
        else { return nil }
        if path.count == 1 {
            let removed = members.remove(at: index).value
            self = .object(members)
            return removed
        }
        var child = members[index].value
        let removed = child.removing(Array(path.dropFirst()))
        members[index].value = child
        self = .object(members)
        return removed
    }
}
