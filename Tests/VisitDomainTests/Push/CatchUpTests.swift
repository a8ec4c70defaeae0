import Testing

@testable import VisitDomain

@Suite(.timeLimit(.minutes(2))) struct CatchUpTests {
    @Test func catchUpRepeatsTheStateWithoutAlert() throws {
        let last = try #require(try TestVisit.accepted(TestVisit.path(to: .nearby)).last)
        let live = try #require(last.pushes.first)
        let catchUp = PushPlanner.catchUp(for: last.state, rules: .contractDefault)
        #expect(catchUp.kind == .update)
        #expect(catchUp.isCatchUp)
        #expect(catchUp.apsTimestamp == live.apsTimestamp)
        #expect(catchUp.alert == nil)
        #expect(catchUp.priority == 5)
        #expect(catchUp.staleDate == live.staleDate)
        // Pushed at once even once its stale date has passed (it is still the latest state).
        let stale = try #require(live.staleDate)
        #expect(live.expiration == .at(stale))
        #expect(catchUp.expiration == .atOrWhenSent(stale))
        var withoutAlert = try JSONValue.parse(live.body)
        _ = withoutAlert.removing(["aps", "alert"])
        #expect(try JSONValue.parse(catchUp.body) == withoutAlert)
    }

    @Test func catchUpOfAnEndedVisitIsTheEnd() throws {
        for status in [VisitStatus.completed, .cancelled, .failed] {
            let last = try #require(try TestVisit.accepted(TestVisit.path(to: status)).last)
            let catchUp = PushPlanner.catchUp(for: last.state, rules: .contractDefault)
            #expect(catchUp.kind == .end)
            #expect(catchUp.body == last.pushes[0].body)
            #expect(PushPlanner.lateStart(for: last.state, rules: .contractDefault) == nil)
        }
    }

    @Test func lateStartCarriesTheCurrentStateAndAnAlert() throws {
        let last = try #require(try TestVisit.accepted(TestVisit.path(to: .onSite)).last)
        let start = try #require(PushPlanner.lateStart(for: last.state, rules: .contractDefault))
        #expect(start.kind == .start)
        #expect(start.audience == .pushToStartTokens)
        #expect(start.apsTimestamp == last.state.apsTimestamp)
        #expect(start.priority == 10)
        let aps = try #require(try JSONValue.parse(start.body)["aps"])
        #expect(aps["alert"] != nil)
        #expect(aps["content-state"] == last.state.contentState.json)
        #expect(aps["attributes"]?["visitId"] == .string("v-1001"))
        #expect(aps["attributes-type"] == .string("ServiceVisitAttributes"))
    }

    /// Contract §9: the renewal at `activityRenewalSeconds`: an end dismissed at once, then a start with the
    /// current state, with increasing timestamps newer than the state's own; none once the visit ended.
    @Test func renewalEndsAtOnceThenStartsWithTheCurrentState() throws {
        let last = try #require(try TestVisit.accepted(TestVisit.path(to: .onSite)).last)
        let now = last.state.apsTimestamp + 27_000
        let renewal = try #require(PushPlanner.renewal(for: last.state, rules: .contractDefault, now: now))
        #expect(renewal.end.kind == .end)
        #expect(renewal.start.kind == .start)
        #expect(last.state.apsTimestamp < renewal.end.apsTimestamp)
        #expect(renewal.end.apsTimestamp < renewal.start.apsTimestamp)
        #expect(renewal.start.apsTimestamp <= now)
        let end = try #require(try JSONValue.parse(renewal.end.body)["aps"])
        #expect(end["dismissal-date"] == .number(Double(renewal.end.apsTimestamp)))
        #expect(end["timestamp"] == .number(Double(renewal.end.apsTimestamp)))
        #expect(end["content-state"] == last.state.contentState.json)
        let start = try #require(try JSONValue.parse(renewal.start.body)["aps"])
        #expect(start["content-state"] == last.state.contentState.json)
        #expect(start["input-push-token"] == .number(1))
        #expect(start["alert"] != nil)
        let ended = try #require(try TestVisit.accepted(TestVisit.path(to: .completed)).last)
        #expect(PushPlanner.renewal(for: ended.state, rules: .contractDefault, now: now) == nil)
    }

    @Test func expirationRules() {
        #expect(PushExpiration.at(100).epoch(sentAt: 50) == 100)
        #expect(PushExpiration.afterSending(seconds: 14_400).epoch(sentAt: 50) == 14_450)
        #expect(PushExpiration.at(100).hasExpired(now: 101))
        #expect(!PushExpiration.at(100).hasExpired(now: 100))
        #expect(!PushExpiration.afterSending(seconds: 1).hasExpired(now: .max))
        #expect(PushExpiration.atOrWhenSent(100).epoch(sentAt: 50) == 100)
        #expect(PushExpiration.atOrWhenSent(100).epoch(sentAt: 500) == 500)
        #expect(!PushExpiration.atOrWhenSent(100).hasExpired(now: 101))
    }
}
