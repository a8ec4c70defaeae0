import Foundation
import Testing

@testable import VisitDomain

@Suite(.timeLimit(.minutes(2))) struct ProjectionRulesTests {
    @Test func theShippedFileIsTheContractsTable() throws {
        let url = TestVisit.repositoryRoot.appendingPathComponent("Projections/rules.json")
        let rules = try ProjectionRules.parse(Data(contentsOf: url))
        #expect(rules.withoutLocales == .contractDefault)
        #expect(rules.localeKeys == ["zh", "zh-hans"])
    }

    static let shipped: JSONValue = {
        let url = TestVisit.repositoryRoot.appendingPathComponent("Projections/rules.json")
        return try! JSONValue.parse(Data(contentsOf: url))
    }()

    struct Case: Sendable, CustomTestStringConvertible {
        var path: [String]
        var value: JSONValue?
        var message: String
        var testDescription: String { message }
    }

    static let cases: [Case] = [
        Case(
            path: ["statuses", "nearby", "relevance"], value: .string("100"),
            message: "statuses.nearby.relevance: expected a number, got a string"),
        Case(
            path: ["statuses", "nearby", "relevance"], value: .number(-1),
            message: "statuses.nearby.relevance: must not be negative"),
        Case(path: ["statuses", "failed"], value: nil, message: "statuses.failed: required field is missing"),
        Case(path: ["statuses", "onsite"], value: .object([]), message: "statuses.onsite: unknown field"),
        Case(
            path: ["statuses", "enRoute", "staleAfterSeconds"], value: .number(0),
            message: "statuses.enRoute.staleAfterSeconds: must be positive"),
        Case(
            path: ["statuses", "enRoute", "staleAfterSeconds"], value: nil,
            message: "statuses.enRoute.staleAfterSeconds: required field is missing"),
        Case(
            path: ["statuses", "completed", "staleAfterSeconds"], value: .number(60),
            message: "statuses.completed.staleAfterSeconds: an ended visit's end push carries no stale date"),
        Case(
            path: ["statuses", "completed", "dismissal", "policy"], value: .string("later"),
            message: #"statuses.completed.dismissal.policy: expected "immediate", "default" or "after""#),
        Case(
            path: ["statuses", "completed", "dismissal", "seconds"], value: nil,
            message: "statuses.completed.dismissal.seconds: required field is missing"),
        Case(
            path: ["statuses", "enRoute", "dismissal"], value: .object([JSONMember("policy", .string("immediate"))]),
            message: "statuses.enRoute.dismissal: only completed, cancelled and failed have a dismissal policy"),
        Case(
            path: ["statuses", "scheduled", "alert"], value: nil,
            message: "statuses.scheduled.alert: required: a push-to-start must carry an alert"),
        Case(
            path: ["statuses", "nearby", "alert", "title"], value: .bool(true),
            message: "statuses.nearby.alert.title: expected a string, got a boolean"),
        Case(
            path: ["priorities", "quiet"], value: .number(7),
            message: "priorities.quiet: Live Activity priorities are 5 or 10"),
        // APNs knows priority 1, but the outbox sends only 5 and 10 (and its table refuses others).
        Case(
            path: ["priorities", "quiet"], value: .number(1),
            message: "priorities.quiet: Live Activity priorities are 5 or 10"),
        Case(
            path: ["priorities", "start"], value: .number(1),
            message: "priorities.start: Live Activity priorities are 5 or 10"),
        Case(
            path: ["maximumPushBytes"], value: .number(5000),
            message: "maximumPushBytes: must be between 256 and 4096 (the APNs limit)"),
        Case(path: ["schemaVersion"], value: .number(2), message: "schemaVersion: only version 1 is known"),
        Case(
            path: ["start", "includeStaleDate"], value: .string("yes"),
            message: "start.includeStaleDate: expected a boolean, got a string"),
        Case(path: ["statuses"], value: .array([]), message: "statuses: expected an object, got an array"),
        Case(
            path: ["progressIntervalSeconds"], value: .number(-1),
            message: "progressIntervalSeconds: must not be negative"),
        Case(
            path: ["budget", "priority10PerHour"], value: .number(0),
            message: "budget.priority10PerHour: must be positive (start and end always go at 10 and count)"),
        Case(
            path: ["budget", "priority10PerHourFrequent"], value: .number(-3),
            message: "budget.priority10PerHourFrequent: must be positive (start and end always go at 10 and count)"),
        Case(path: ["budget", "perDay"], value: .number(3), message: "budget.perDay: unknown field"),
        Case(
            path: ["activityRenewalSeconds"], value: .number(28_800),
            message: "activityRenewalSeconds: must be positive and under 28800 (iOS's 8 hours)"),
        Case(
            path: ["channels", "deleteAfterEndSeconds"], value: .number(-1),
            message: "channels.deleteAfterEndSeconds: must not be negative"),
        Case(path: ["channels", "limit"], value: .number(3), message: "channels.limit: unknown field"),
        Case(
            path: ["statuses", "nearby", "fallbackAlert", "body"], value: .number(1),
            message: "statuses.nearby.fallbackAlert.body: expected a string, got a number"),
        Case(
            path: ["statuses", "onSite", "fallbackAlert", "body"], value: .string(String(repeating: "\"", count: 2000)),
            message: "statuses.onSite.fallbackAlert: the notification would be 4379 bytes, over the 4096-byte push budget"),
    ]

    @Test(arguments: cases) func errorsNameTheKeyPath(_ testCase: Case) {
        var json = Self.shipped
        json.replace(testCase.path, with: testCase.value)
        do {
            _ = try ProjectionRules.parse(json.serialized())
            Issue.record("accepted")
        } catch {
            #expect(error.code == .invalid)
            #expect(error.message == testCase.message)
        }
    }

    @Test func channelsDeleteAfterEndSecondsIsReadWithItsDefault() throws {
        #expect(try ProjectionRules.parse(Self.shipped.serialized()).channelDeleteAfterEndSeconds == 3600)
        var json = Self.shipped
        json.replace(["channels", "deleteAfterEndSeconds"], with: .number(120))
        #expect(try ProjectionRules.parse(json.serialized()).channelDeleteAfterEndSeconds == 120)
    }

    @Test func malformedFiles() {
        do {
            _ = try ProjectionRules.parse(Array("{statuses".utf8))
            Issue.record("parsed garbage")
        } catch {
            #expect(error.code == .malformedJSON)
        }
    }

    @Test func optionalSectionsDefault() throws {
        var json = Self.shipped
        for key in [
            "priorities", "startEndExpirationSeconds", "start", "maximumPushBytes", "comment", "budget",
            "progressIntervalSeconds", "activityRenewalSeconds", "channels", "trackingPage", "locales",
        ] {
            json.replace([key], with: nil)
        }
        #expect(try ProjectionRules.parse(json.serialized()) == .contractDefault)
    }

    @Test func aStartCanLeaveOutStaleDateAndRelevance() throws {
        var json = Self.shipped
        json.replace(
            ["start"],
            with: .object([
                JSONMember("includeStaleDate", .bool(false)), JSONMember("includeRelevanceScore", .bool(false)),
            ]))
        let rules = try ProjectionRules.parse(json.serialized())
        let state = try TestVisit.fold([(TestVisit.scheduled(), TestVisit.t0)])
        let start = try #require(PushPlanner.pushes(for: state, rules: rules).first)
        let aps = try #require(try JSONValue.parse(start.body)["aps"])
        #expect(aps["stale-date"] == nil)
        #expect(aps["relevance-score"] == nil)
        #expect(aps["input-push-token"] == .number(1))
    }
}
