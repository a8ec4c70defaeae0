import Testing

@testable import VisitDomain

/// The 4 KB budget is checked when the event is decided, on the largest push it implies.
@Suite(.timeLimit(.minutes(2))) struct OversizeTests {
    /// 1024 bytes that escape to 6 bytes each in JSON (`\u0001`): within every field bound,
    /// far over the budget once in a push.
    static let heavy = String(repeating: "\u{1}", count: 1000)

    @Test func oversizeFailureReasonIsRefusedAtAcceptTime() throws {
        let state = try #require(try TestVisit.accepted(TestVisit.path(to: .enRoute)).last).state
        // Within every field bound, over the budget once in a push. The input path now refuses the control
        // characters that make it so heavy (BadInputTests), so the event is made here: the budget is the
        // decider's own check, whatever made the event.
        let event = VisitEvent.failed(reason: Self.heavy)
        do {
            _ = try VisitDecider.accept(
                event, given: state, recordedAt: state.lastRecordedAt + 1, rules: .contractDefault)
            Issue.record("an end push over 4 KB was accepted")
        } catch {
            #expect(error.code == .pushTooLarge)
            #expect(error.code.httpStatus == 422)
            #expect(error.message.contains("4096"))
        }
    }

    @Test func theLargestPushAmongThePlannedOnesIsTheLargestPlannedAfresh() throws {
        // accept checks the budget on the pushes it planned (a start among them stands for a later token's);
        // the answer must be the one planning everything again, the late start included, gives.
        for status in VisitStatus.allCases {
            for accepted in try TestVisit.accepted(TestVisit.path(to: status)) {
                let state = accepted.state
                let afresh = PushPlanner.largestPossiblePush(for: state, rules: .contractDefault)
                let among = PushPlanner.largestPossiblePush(among: accepted.pushes, for: state, rules: .contractDefault)
                var everything = PushPlanner.pushes(for: state, rules: .contractDefault)
                if let late = PushPlanner.lateStart(for: state, rules: .contractDefault) { everything.append(late) }
                // A renewal's start carries its own alert (longer than the booking's in the shipped rules).
                if let renewal = PushPlanner.renewal(for: state, rules: .contractDefault, now: state.lastRecordedAt) {
                    everything.append(renewal.start)
                }
                let largest = everything.map(\.bodySize).max()
                #expect(among?.bodySize == largest, "\(status) v\(state.version)")
                let measured = PushPlanner.largestPossiblePushSize(among: accepted.pushes, for: state, rules: .contractDefault)
                #expect(measured?.bytes == largest, "\(status) v\(state.version)")
                #expect(afresh?.bodySize == largest, "\(status) v\(state.version)")
            }
        }
        for type in [VisitEventType.progress, .reassigned] {
            let accepted = try TestVisit.accepted(TestVisit.path(to: .enRoute) + [TestVisit.sample(type)])
            let last = try #require(accepted.last)
            let late = try #require(PushPlanner.lateStart(for: last.state, rules: .contractDefault))
            let among = try #require(
                PushPlanner.largestPossiblePush(among: last.pushes, for: last.state, rules: .contractDefault))
            #expect(among.bodySize >= late.bodySize, "\(type): the start a later token would get is measured")
        }
    }

    @Test func oversizeSchedulingIsRefused() throws {
        var scheduled = TestVisit.scheduled()
        if case .scheduled(var payload) = scheduled {
            payload.attributes.jobSummary = Self.heavy
            scheduled = .scheduled(payload)
        }
        let error = #expect(throws: VisitDecisionError.self) {
            try VisitDecider.accept(scheduled, given: nil, recordedAt: TestVisit.t0, rules: .contractDefault)
        }
        #expect(error?.code == .pushTooLarge)
        #expect(error?.message.contains("4096") == true)
    }

    @Test func reassignmentIsMeasuredOnTheStartALaterTokenWouldGet() throws {
        // The update of a reassignment does not carry the attributes, a late start does:
        // with a long (but legal) address and technician, only the start is over budget.
        var scheduled = TestVisit.scheduled()
        if case .scheduled(var payload) = scheduled {
            payload.attributes.serviceAddress = String(repeating: "\"", count: 1000)
            scheduled = .scheduled(payload)
        }
        let state = try VisitDecider.accept(scheduled, given: nil, recordedAt: TestVisit.t0, rules: .contractDefault)
            .state
        let heavyTechnician = Technician(
            id: "t-9", name: String(repeating: "\"", count: 256), avatarSymbol: "person",
            vanDescription: String(repeating: "\"", count: 1000))
        let update = PushPlanner.update(
            try VisitDecider.evolve(
                state, RecordedVisitEvent(.reassigned(heavyTechnician, .none), version: 2, recordedAt: TestVisit.t0 + 1)
            ),
            rules: .contractDefault, alert: nil, isCatchUp: false)
        #expect(update.bodySize <= 4096)
        do {
            _ = try VisitDecider.accept(
                .reassigned(heavyTechnician, .none), given: state, recordedAt: TestVisit.t0 + 1, rules: .contractDefault
            )
            Issue.record("accepted a reassignment whose start would be over 4 KB")
        } catch {
            #expect(error.code == .pushTooLarge)
            #expect(error.message.contains("start"))
        }
    }

    @Test func theBudgetIsARule() throws {
        var rules = ProjectionRules.contractDefault
        rules.maximumPushBytes = 400
        let accepted = try TestVisit.accepted([TestVisit.scheduled()])
        let largest = try #require(accepted.first?.pushes.map(\.bodySize).max())
        #expect(largest > 400)
        #expect(largest <= 4096)
        let error = #expect(throws: VisitDecisionError.self) {
            try VisitDecider.accept(TestVisit.scheduled(), given: nil, recordedAt: TestVisit.t0, rules: rules)
        }
        #expect(error?.code == .pushTooLarge)
        #expect(error?.message.contains("400") == true, "the message names the rule's budget")
    }
}
