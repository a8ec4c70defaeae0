import Testing

@testable import VisitDomain

/// Every row of the contract's §5 rule table under the default rules (`Projections/rules.json`).
@Suite(.timeLimit(.minutes(2))) struct RuleTableTests {
    /// What one row promises for the push of the event that enters the status.
    struct Row: Sendable, CustomTestStringConvertible {
        var status: VisitStatus
        var kind: PushKind
        var relevance: Double
        var alertTitle: String?
        var alertBody: String?
        var sound: String?
        var staleAfter: Int?
        var dismissal: String?
        var testDescription: String { status.rawValue }
    }

    static let rows: [Row] = [
        Row(status: .enRoute, kind: .update, relevance: 80, staleAfter: 120),
        Row(
            status: .nearby, kind: .update, relevance: 100, alertTitle: "Service visit",
            alertBody: "Your technician is a few minutes away.", sound: "default", staleAfter: 120),
        Row(
            status: .onSite, kind: .update, relevance: 80, alertTitle: "Service visit",
            alertBody: "Your technician has arrived.", sound: "default", staleAfter: 7200),
        Row(status: .finishing, kind: .update, relevance: 80, staleAfter: 3600),
        Row(status: .completed, kind: .end, relevance: 0, dismissal: "after"),
        Row(status: .cancelled, kind: .end, relevance: 0, dismissal: "immediate"),
        Row(status: .failed, kind: .end, relevance: 0, dismissal: "immediate"),
    ]

    @Test(arguments: rows) func statusRow(_ row: Row) throws {
        let accepted = try TestVisit.accepted(TestVisit.path(to: row.status))
        let last = try #require(accepted.last)
        let state = last.state
        #expect(state.status == row.status)
        // Besides its own push, an active visit's event re-plans the start still waiting (if any), and a status
        // with a fallback alert notifies the devices without a Live Activity (contract §9).
        let fallback = ProjectionRules.contractDefault.rule(for: row.status).fallbackAlert
        #expect(
            last.pushes.map(\.audience)
                == (row.kind == .end ? [.liveActivities] : [.liveActivities, .pendingStarts])
                + (fallback == nil ? [] : [.fallbackDevices]))
        if let fallback, let notification = last.pushes.last {
            #expect(notification.kind == .alert)
            #expect(notification.priority == 10)
            #expect(notification.expiration == .afterSending(seconds: 3600))
            #expect(notification.body == fallback.body(visitId: state.visitId, status: row.status))
        }
        let push = try #require(last.pushes.first)
        let aps = try #require(try JSONValue.parse(push.body)["aps"])
        #expect(push.kind == row.kind)
        #expect(aps["event"] == .string(row.kind.rawValue))
        #expect(push.audience == .liveActivities)
        #expect(push.alert?.title == row.alertTitle)
        #expect(push.alert?.body == row.alertBody)
        #expect(push.alert?.sound == row.sound)
        #expect(aps["alert"] == push.alert?.json)
        // apns-priority: 10 for an alert and for start/end, 5 otherwise.
        #expect(push.priority == (row.alertTitle != nil || row.kind != .update ? 10 : 5))
        #expect(aps["timestamp"] == .number(Double(state.apsTimestamp)))

        let view = VisitView(state: state, rules: .contractDefault)
        #expect(view.relevanceScore == row.relevance)
        if let staleAfter = row.staleAfter {
            let expected = state.lastRecordedAt + staleAfter
            #expect(view.staleDate == expected)
            #expect(push.staleDate == expected)
            #expect(aps["stale-date"] == .number(Double(expected)))
            #expect(aps["relevance-score"] == .number(row.relevance))
            #expect(push.expiration == .at(expected))
            #expect(view.dismissal == nil)
            #expect(aps["dismissal-date"] == nil)
        } else {
            // Ends: no stale date, no relevance score, a dismissal date by policy.
            #expect(view.staleDate == nil)
            #expect(aps["stale-date"] == nil)
            #expect(aps["relevance-score"] == nil)
            #expect(push.expiration == .afterSending(seconds: 14_400))
            switch row.dismissal {
            case "after":
                #expect(view.dismissal == .after(date: state.apsTimestamp + 3600))
                #expect(aps["dismissal-date"] == .number(Double(state.apsTimestamp + 3600)))
            case "immediate":
                #expect(view.dismissal == .immediate)
                #expect(aps["dismissal-date"] == .number(Double(state.apsTimestamp)))
            default:
                Issue.record("unexpected dismissal \(String(describing: row.dismissal))")
            }
        }
    }

    @Test func scheduledStartsAndUpdatesWithTheBookingAlert() throws {
        let t0 = TestVisit.t0
        // Window opens late: stale at the window's start.
        let late = try TestVisit.accepted([TestVisit.scheduled(window: ArrivalWindow(start: t0 + 900, end: t0 + 1800))])
        let planned = try #require(late.first).pushes
        #expect(planned.map(\.kind) == [.start, .update, .alert])
        let pushes = planned.filter { $0.kind != .alert }
        #expect(pushes.map(\.kind) == [.start, .update])
        #expect(pushes.map(\.audience) == [.pushToStartTokens, .liveActivities])
        for push in pushes {
            #expect(push.alert == AlertContent(title: "Visit booked", body: "Follow your technician live."))
            #expect(push.priority == 10)
            #expect(push.relevanceScore == 80)
            #expect(push.staleDate == t0 + 900)
            #expect(push.apsTimestamp == t0)
        }
        #expect(pushes[0].expiration == .afterSending(seconds: 14_400))
        #expect(pushes[1].expiration == .at(t0 + 900))
        // Window already open: 120 s after the recorded time.
        let early = try TestVisit.accepted([TestVisit.scheduled(window: ArrivalWindow(start: t0 - 600, end: t0 + 600))])
        #expect(try #require(early.first).pushes.filter { $0.kind != .alert }.allSatisfy { $0.staleDate == t0 + 120 })
        #expect(VisitView(state: try #require(early.first).state, rules: .contractDefault).staleDate == t0 + 120)
    }

    @Test func progressKeepsTheStatusAndItsRowWithoutAlert() throws {
        for status in [VisitStatus.scheduled, .enRoute, .nearby, .onSite, .finishing] {
            let path = TestVisit.path(to: status) + [.progress(ArrivalUpdate(kilometresAway: 0.5))]
            let last = try #require(try TestVisit.accepted(path).last)
            let push = try #require(last.pushes.first)
            #expect(last.state.status == status)
            #expect(push.kind == .update)
            #expect(push.alert == nil)
            #expect(push.priority == 5)
            let rule = ProjectionRules.contractDefault.rule(for: status)
            #expect(push.relevanceScore == rule.relevance)
            var stale = last.state.lastRecordedAt + (rule.staleAfterSeconds ?? 0)
            if rule.staleNotBeforeArrivalStart { stale = max(stale, last.state.arrivalWindow.start) }
            #expect(push.staleDate == stale)
            #expect(last.state.kilometresAway == 0.5)
            // Contract §8: progress updates are paced by the rules' interval; status changes never are.
            #expect(push.pacingSeconds == ProjectionRules.contractDefault.progressIntervalSeconds)
            let statusChanges = try TestVisit.accepted(TestVisit.path(to: status))
            #expect(statusChanges.flatMap(\.pushes).allSatisfy { $0.pacingSeconds == nil })
        }
    }

    /// Contract §9: the body exactly as the contract gives it; never for progress or reassignment.
    @Test func fallbackNotificationsFollowStatusChangesOnly() throws {
        let path = TestVisit.path(to: .nearby) + [.progress(ArrivalUpdate(kilometresAway: 0.5))]
        let accepted = try TestVisit.accepted(path)
        let nearby = try #require(accepted.dropLast().last)
        let notification = try #require(nearby.pushes.first { $0.kind == .alert })
        let id = nearby.state.visitId
        #expect(
            String(decoding: notification.body, as: UTF8.self)
                == #"{"aps":{"alert":{"title":"Service visit","body":"Your technician is a few minutes away."},"#
                + #""sound":"default","thread-id":"visit-\#(id)"},"visitId":"\#(id)","status":"nearby"}"#)
        #expect(try #require(accepted.last).pushes.allSatisfy { $0.kind != .alert })
        let enRoute = try #require(try TestVisit.accepted(TestVisit.path(to: .enRoute)).last)
        #expect(enRoute.pushes.allSatisfy { $0.kind != .alert })
    }

    @Test func anIntervalOfZeroPacesNothing() throws {
        var rules = ProjectionRules.contractDefault
        rules.progressIntervalSeconds = 0
        let path = TestVisit.path(to: .enRoute) + [.progress(ArrivalUpdate(kilometresAway: 0.5))]
        let last = try #require(try TestVisit.accepted(path, rules: rules).last)
        #expect(last.pushes.allSatisfy { $0.pacingSeconds == nil })
    }

    /// A start deferred until the arrival window must not go out with the booking-time state: every
    /// event of an active visit re-plans it with the current state, timestamp and window.
    @Test func aLaterEventReplansTheWaitingStartWithTheCurrentState() throws {
        let accepted = try TestVisit.accepted(TestVisit.path(to: .nearby))
        let booked = try #require(accepted.first?.pushes.first)
        #expect(booked.kind == .start && booked.audience == .pushToStartTokens)
        let last = try #require(accepted.last)
        let replacement = try #require(last.pushes.first { $0.audience == .pendingStarts })
        #expect(
            replacement
                == PushPlanner.lateStart(for: last.state, rules: .contractDefault).map {
                    var plan = $0
                    plan.audience = .pendingStarts
                    plan.isCatchUp = false
                    return plan
                })
        #expect(replacement.apsTimestamp == last.state.apsTimestamp)
        #expect(replacement.apsTimestamp > booked.apsTimestamp)
        let aps = try #require(try JSONValue.parse(replacement.body)["aps"])
        #expect(aps["content-state"] == last.state.contentState.json)
        #expect(aps["event"] == .string("start"))
        #expect(aps["alert"] != nil)
    }

    @Test func reassignedGoesBackToScheduledWithoutAlertOrStart() throws {
        let newTechnician = Technician(id: "t-7", name: "Kim", avatarSymbol: "person.fill", vanDescription: "Red van")
        let path = TestVisit.path(to: .nearby) + [.reassigned(newTechnician, ArrivalUpdate(kilometresAway: 9))]
        let last = try #require(try TestVisit.accepted(path).last)
        #expect(last.state.status == .scheduled)
        #expect(last.state.technician == newTechnician)
        // No new start: only the one still waiting (if any) is re-planned with the new technician.
        #expect(last.pushes.map(\.kind) == [.update, .start])
        #expect(last.pushes[1].audience == .pendingStarts)
        #expect(last.pushes[0].alert == nil)
        #expect(last.pushes[0].priority == 5)
        #expect(last.state.contentState.technicianName == "Kim")
        #expect(last.state.contentState.kilometresAway == 9)
    }

    @Test func onSiteCollapsesTheWindowAndZeroesTheDistance() throws {
        let last = try #require(try TestVisit.accepted(TestVisit.path(to: .onSite)).last)
        let content = last.state.contentState
        #expect(content.kilometresAway == 0)
        #expect(content.arrivalStartEpoch == last.recorded.recordedAt)
        #expect(content.arrivalEndEpoch == last.recorded.recordedAt)
    }

    @Test func failedShowsTheReasonInVanDescription() throws {
        let last = try #require(try TestVisit.accepted(TestVisit.path(to: .failed)).last)
        #expect(last.state.contentState.vanDescription == "Van broke down")
        #expect(last.state.contentState.technicianName == "Sam")
        let cancelled = try #require(try TestVisit.accepted(TestVisit.path(to: .cancelled)).last)
        #expect(cancelled.state.contentState.vanDescription == "White van, blue stripe")
    }

    @Test func defaultDismissalHasNoDate() throws {
        var rules = ProjectionRules.contractDefault
        rules.statuses[.cancelled]?.dismissal = .default
        let last = try #require(try TestVisit.accepted(TestVisit.path(to: .cancelled), rules: rules).last)
        #expect(VisitView(state: last.state, rules: rules).dismissal == .default)
        #expect(try JSONValue.parse(last.pushes[0].body)["aps"]?["dismissal-date"] == nil)
    }
}
