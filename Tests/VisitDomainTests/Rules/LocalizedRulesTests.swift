import Foundation
import Testing

@testable import VisitDomain

/// The rules' texts in other languages (`locales`): the visit's locale picks them, falling back subtag by
/// subtag to the default texts; a block may give only texts the defaults have, and every language's texts
/// are held to the push budget at load.
@Suite struct LocalizedRulesTests {
    static let shipped = ProjectionRulesTests.shipped

    static func parse(_ json: JSONValue) throws(ProjectionRulesError) -> ProjectionRules {
        try ProjectionRules.parse(json.serialized())
    }

    static func nearbyPushes(locale: String?, rules: ProjectionRules) throws -> [PushPlan] {
        var state = try #require(try TestVisit.accepted(TestVisit.path(to: .enRoute), rules: rules).last?.state)
        state.locale = locale.flatMap(LanguageTag.init)
        let nearby = try VisitDecider.accept(
            .nearby(ArrivalUpdate(kilometresAway: 0.8)), given: state, recordedAt: TestVisit.t0 + 600, rules: rules)
        return nearby.pushes
    }

    @Test func theVisitsLocalePicksItsTextsAndFallsBack() throws {
        let rules = try Self.parse(Self.shipped)
        for locale in ["zh-Hans-CN", "zh-Hans", "ZH-HANT-TW", "zh"] {
            let pushes = try Self.nearbyPushes(locale: locale, rules: rules)
            let update = try #require(pushes.first { $0.kind == .update })
            #expect(update.alert == AlertContent(title: "上门服务", body: "技师几分钟后就到。", sound: "default"), "\(locale)")
            let fallback = try #require(pushes.first { $0.kind == .alert })
            #expect(fallback.alert?.body == "技师几分钟后就到。")
            let start = try #require(pushes.first { $0.kind == .start })
            #expect(start.alert?.title == "上门服务已预约")
        }
        for locale in ["es", "en-GB", nil] {
            let pushes = try Self.nearbyPushes(locale: locale, rules: rules)
            let update = try #require(pushes.first { $0.kind == .update })
            #expect(update.alert == ProjectionRules.contractDefault.rule(for: .nearby).alert, "\(locale ?? "none")")
        }
        #expect(rules.localized(for: LanguageTag("zh-Hans")).renewalAlert.title == "技师仍在路上")
        #expect(rules.localized(for: LanguageTag("zh-Hans")).trackingLabels["statuses.nearby"] == "即将到达")
        #expect(rules.localized(for: LanguageTag("es")).trackingLabels["statuses.nearby"] == "Nearby")
    }

    @Test func aMoreSpecificBlockWinsAndKeepsItsParentsTexts() throws {
        var json = Self.shipped
        json.replace(
            ["locales"],
            with: try JSONValue.parse(
                Array(
                    #"""
                    {"pt": {"renewalAlert": {"title": "Ainda a caminho", "body": "A sua visita continua aqui."},
                            "statuses": {"nearby": {"alert": {"body": "O técnico está a poucos minutos."}}}},
                     "pt-BR": {"statuses": {"nearby": {"alert": {"body": "O técnico está a poucos minutos daí."}}}}}
                    """#.utf8)))
        let rules = try Self.parse(json)
        let brazil = rules.localized(for: LanguageTag("pt-br-x-test"))
        #expect(brazil.rule(for: .nearby).alert?.body == "O técnico está a poucos minutos daí.")
        #expect(brazil.rule(for: .nearby).alert?.title == "Service visit")
        #expect(brazil.renewalAlert.title == "Ainda a caminho")
        #expect(rules.localized(for: LanguageTag("pt-PT")).rule(for: .nearby).alert?.body == "O técnico está a poucos minutos.")
    }

    @Test(arguments: [
        (["locales", "zh", "statuses", "enRoute", "alert"], "locales.zh.statuses.enRoute.alert"),
        (["locales", "zh", "statuses", "nearby", "relevance"], "locales.zh.statuses.nearby.relevance"),
        (["locales", "zh", "statuses", "nearby", "alert", "sound"], "locales.zh.statuses.nearby.alert.sound"),
        (["locales", "zh", "statuses", "arrived"], "locales.zh.statuses.arrived"),
        (["locales", "zh-Hans", "maxRenewals"], "locales.zh-Hans.maxRenewals"),
        (["locales", "zh", "trackingPage", "subtitle"], "locales.zh.trackingPage.subtitle"),
        (["locales", "zh", "statuses", "enRoute", "fallbackAlert"], "locales.zh.statuses.enRoute.fallbackAlert"),
    ])
    func aKeyTheDefaultsLackIsRefusedWithItsPath(_ path: [String], _ expected: String) throws {
        var json = Self.shipped
        json.insert(path, .object([JSONMember("title", .string("x")), JSONMember("body", .string("y"))]))
        let error = try #require(throws: ProjectionRulesError.self) { try Self.parse(json) }
        #expect(error.keyPath == expected)
        #expect(error.code == .invalid)
    }

    @Test func aMalformedOrRepeatedLanguageIsRefused() throws {
        var json = Self.shipped
        json.replace(["locales", "zh_CN"], with: .object([]))
        #expect(try #require(throws: ProjectionRulesError.self) { try Self.parse(json) }.keyPath == "locales.zh_CN")
        json = Self.shipped
        json.replace(["locales", "ZH"], with: .object([]))
        #expect(try #require(throws: ProjectionRulesError.self) { try Self.parse(json) }.keyPath == "locales.ZH")
        json = Self.shipped
        json.replace(["locales", "zh", "trackingPage", "away"], with: .string("公里"))
        #expect(
            try #require(throws: ProjectionRulesError.self) { try Self.parse(json) }.keyPath == "locales.zh.trackingPage.away")
    }

    @Test func aChineseTextOverTheBudgetIsRefusedAtLoad() throws {
        // 1,300 Chinese characters are 3,900 bytes of UTF-8: under the text's own limit, over the push budget.
        var json = Self.shipped
        json.replace(
            ["locales", "zh-Hans", "statuses", "completed", "fallbackAlert", "body"],
            with: .string(String(repeating: "服", count: 1300)))
        let error = try #require(throws: ProjectionRulesError.self) { try Self.parse(json) }
        #expect(error.keyPath == "locales.zh-Hans.statuses.completed.fallbackAlert")
        #expect(error.reason.contains("push budget"))
        // A shorter one fits: the budget counts each language's own text.
        json.replace(
            ["locales", "zh-Hans", "statuses", "completed", "fallbackAlert", "body"],
            with: .string(String(repeating: "服", count: 1000)))
        #expect(throws: Never.self) { try Self.parse(json) }
    }

    @Test func aVisitsPushIsMeasuredWithItsOwnLanguagesTexts() throws {
        var json = Self.shipped
        // A long Chinese booking alert: a zh visit's start is larger than an English one's.
        json.replace(
            ["locales", "zh", "statuses", "scheduled", "alert", "body"], with: .string(String(repeating: "技", count: 340)))
        let rules = try Self.parse(json)
        var english = try #require(try TestVisit.accepted([TestVisit.scheduled()], rules: rules).last?.state)
        let englishSize = try #require(PushPlanner.largestPossiblePush(for: english, rules: rules)).bodySize
        english.locale = LanguageTag("zh")
        let chinese = try #require(PushPlanner.largestPossiblePush(for: english, rules: rules))
        #expect(chinese.bodySize > englishSize + 900)
        #expect(chinese.alert?.body.hasPrefix("技技") == true)
    }
}

extension JSONValue {
    /// Puts `value` at `path`, making the objects on the way that are missing.
    fileprivate mutating func insert(_ path: [String], _ value: JSONValue) {
        guard let key = path.first else { return }
        guard case .object(var members) = self else { return }
        if path.count == 1 {
            members.removeAll { $0.key == key }
            members.append(JSONMember(key, value))
        } else if let index = members.firstIndex(where: { $0.key == key }) {
            members[index].value.insert(Array(path.dropFirst()), value)
        } else {
            var child = JSONValue.object([])
            child.insert(Array(path.dropFirst()), value)
            members.append(JSONMember(key, child))
        }
        self = .object(members)
    }
}
