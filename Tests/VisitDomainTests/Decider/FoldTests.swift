import Testing

@testable import VisitDomain

@Suite(.timeLimit(.minutes(2))) struct FoldTests {
    static let t = TestVisit.t0

    static let wholeVisit: [(VisitEvent, Int)] = [
        (TestVisit.scheduled(), t),
        (.enRoute(ArrivalUpdate(kilometresAway: 9)), t + 600),
        (.progress(ArrivalUpdate(arrivalWindow: ArrivalWindow(start: t + 1200, end: t + 1500))), t + 700),
        (.nearby(ArrivalUpdate(kilometresAway: 1.2)), t + 1000),
        (.onSite, t + 1300),
        (.finishing(.none), t + 4000),
        (.completed, t + 5000),
    ]

    @Test func foldIsDeterministic() throws {
        let once = try TestVisit.fold(Self.wholeVisit)
        let twice = try TestVisit.fold(Self.wholeVisit)
        #expect(once == twice)
        let rules = ProjectionRules.contractDefault
        #expect(
            VisitView(state: once, rules: rules).json(liveActivities: 1).serialized()
                == VisitView(state: twice, rules: rules).json(liveActivities: 1).serialized())
        // Every prefix too: the same state and the same bodies each time.
        for count in 1...Self.wholeVisit.count {
            let a = try TestVisit.fold(Array(Self.wholeVisit.prefix(count)))
            let b = try TestVisit.fold(Array(Self.wholeVisit.prefix(count)))
            #expect(PushPlanner.pushes(for: a, rules: rules) == PushPlanner.pushes(for: b, rules: rules))
        }
    }

    @Test func replayThroughTheStoredFormEqualsTheLiveFold() throws {
        // What the API computed when accepting each event…
        var state: VisitState?
        for (index, (event, at)) in Self.wholeVisit.enumerated() {
            let accepted = try VisitDecider.accept(event, given: state, recordedAt: at, rules: .contractDefault)
            #expect(accepted.recorded.version == index + 1)
            state = accepted.state
        }
        // …equals what a replay of the stored log computes.
        let stored = TestVisit.history(Self.wholeVisit).map(StoredVisitEvent.init)
        let replayed = try VisitDecider.replay(stored)
        #expect(replayed == state)
    }

    @Test func foldTracksEverything() throws {
        let state = try TestVisit.fold(Array(Self.wholeVisit.prefix(3)))
        #expect(state.status == .enRoute)
        #expect(state.version == 3)
        #expect(state.kilometresAway == 9)
        #expect(state.arrivalWindow == ArrivalWindow(start: Self.t + 1200, end: Self.t + 1500))
        #expect(state.customerId == "c-7")
        #expect(state.technician.id == "t-42")
        #expect(state.lastEventType == .progress)
        #expect(state.statusChangedAt == Self.t + 600)
        #expect(state.statusChangedVersion == 2)
        #expect(!state.lastEventChangedStatus)
        #expect(state.scheduledAt == Self.t)
        #expect(state.lastRecordedAt == Self.t + 700)
        #expect(!state.hasEnded)
        let ended = try TestVisit.fold(Self.wholeVisit)
        #expect(ended.hasEnded)
        #expect(ended.kilometresAway == 0)
    }

    @Test func sameSecondEventsGetStrictlyIncreasingTimestamps() throws {
        let t = Self.t
        let events: [(VisitEvent, Int)] = [
            (TestVisit.scheduled(), t),
            (.enRoute(.none), t),
            (.progress(ArrivalUpdate(kilometresAway: 3)), t),
            (.nearby(.none), t),
            (.progress(ArrivalUpdate(kilometresAway: 1)), t + 2),  // behind the bumped clock: t + 4
            (.onSite, t + 100),  // ahead again: its own time
            (.finishing(.none), t + 50),  // a recorded time that went backwards (clock skew)
        ]
        var timestamps: [Int] = []
        var state: VisitState?
        for recorded in TestVisit.history(events) {
            state = try VisitDecider.evolve(state, recorded)
            timestamps.append(try #require(state).apsTimestamp)
        }
        #expect(timestamps == [t, t + 1, t + 2, t + 3, t + 4, t + 100, t + 101])
        #expect(zip(timestamps, timestamps.dropFirst()).allSatisfy { $0 < $1 })
        // Deterministic under replay: the same timestamps from the stored log.
        let stored = TestVisit.history(events).map(StoredVisitEvent.init)
        #expect(try VisitDecider.replay(stored)?.apsTimestamp == t + 101)
        #expect(try VisitDecider.replay(stored.prefix(4))?.apsTimestamp == t + 3)
    }

    @Test func impossibleHistoriesAreReported() throws {
        let t = Self.t
        let cases: [[RecordedVisitEvent]] = [
            [RecordedVisitEvent(.enRoute(.none), version: 1, recordedAt: t)],
            [RecordedVisitEvent(TestVisit.scheduled(), version: 2, recordedAt: t)],
            [
                RecordedVisitEvent(TestVisit.scheduled(), version: 1, recordedAt: t),
                RecordedVisitEvent(TestVisit.scheduled(), version: 2, recordedAt: t),
            ],
            [
                RecordedVisitEvent(TestVisit.scheduled(), version: 1, recordedAt: t),
                RecordedVisitEvent(.onSite, version: 3, recordedAt: t),
            ],
        ]
        for history in cases {
            do {
                _ = try VisitDecider.fold(history)
                Issue.record("accepted an impossible history")
            } catch {
                #expect(error.code == .inconsistentHistory)
            }
        }
        #expect(try VisitDecider.fold([]) == nil)
    }

    @Test func aRuleChangeAppliesOnReplayWithoutTouchingEvents() throws {
        let state = try TestVisit.fold(Array(Self.wholeVisit.prefix(4)))
        var rules = ProjectionRules.contractDefault
        #expect(VisitView(state: state, rules: rules).staleDate == state.lastRecordedAt + 120)
        rules.statuses[.nearby]?.staleAfterSeconds = 300
        rules.statuses[.nearby]?.relevance = 90
        let view = VisitView(state: state, rules: rules)
        #expect(view.staleDate == state.lastRecordedAt + 300)
        #expect(view.relevanceScore == 90)
    }
}
