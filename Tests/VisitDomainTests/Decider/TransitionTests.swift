import Testing

@testable import VisitDomain

/// The contract's §4 transition table, written out here independently of the code's.
@Suite(.timeLimit(.minutes(2))) struct TransitionTests {
    static let table: [VisitEventType: Set<VisitStatus>] = [
        .enRoute: [.scheduled],
        .nearby: [.scheduled, .enRoute],
        .onSite: [.scheduled, .enRoute, .nearby],
        .finishing: [.onSite],
        .completed: [.onSite, .finishing],
        .cancelled: [.scheduled, .enRoute, .nearby, .onSite, .finishing],
        .failed: [.scheduled, .enRoute, .nearby, .onSite, .finishing],
        .progress: [.scheduled, .enRoute, .nearby, .onSite, .finishing],
        .reassigned: [.scheduled, .enRoute, .nearby],
    ]

    static let postable = VisitEventType.allCases.filter { $0 != .scheduled }

    /// Where each event leads, written out apart from the code's `targetStatus`.
    @Test func eachEventLeadsToItsStatus() {
        let leadsTo: [VisitEventType: VisitStatus?] = [
            .scheduled: .scheduled, .enRoute: .enRoute, .nearby: .nearby, .onSite: .onSite, .finishing: .finishing,
            .completed: .completed, .cancelled: .cancelled, .failed: .failed, .progress: nil, .reassigned: .scheduled,
        ]
        for type in VisitEventType.allCases { #expect(type.targetStatus == leadsTo[type] ?? nil, "\(type)") }
        #expect(leadsTo.count == VisitEventType.allCases.count)
    }

    @Test(arguments: VisitStatus.allCases, postable)
    func everyEventFromEveryStatus(status: VisitStatus, type: VisitEventType) throws {
        let state = try #require(try TestVisit.accepted(TestVisit.path(to: status)).last).state
        let event = TestVisit.sample(type)
        let legal = try #require(Self.table[type]).contains(status)
        do {
            let accepted = try VisitDecider.accept(
                event, given: state, recordedAt: state.lastRecordedAt + 10, rules: .contractDefault)
            #expect(legal, "\(type) from \(status) should be refused")
            #expect(accepted.recorded.version == state.version + 1)
            if let target = type.targetStatus { #expect(accepted.state.status == target) }
        } catch {
            #expect(!legal, "\(type) from \(status) should be accepted")
            #expect(error.code == (status.hasEnded ? .visitEnded : .illegalTransition))
            #expect(error.code.httpStatus == 409)
            #expect(error.status == status)
            #expect(error.eventType == type)
        }
    }

    @Test func schedulingTwiceIsRefused() throws {
        let state = try #require(try TestVisit.accepted([TestVisit.scheduled()]).last).state
        #expect(throws: VisitDecisionError.self) { try VisitDecider.decide(TestVisit.scheduled(), given: state) }
        do {
            try VisitDecider.decide(TestVisit.scheduled(), given: state)
        } catch {
            #expect(error.code == .alreadyScheduled)
            #expect(error.code.httpStatus == 409)
        }
    }

    @Test(arguments: postable) func nothingBeforeScheduling(type: VisitEventType) {
        do {
            try VisitDecider.decide(TestVisit.sample(type), given: nil)
            Issue.record("\(type) accepted on a visit that does not exist")
        } catch {
            #expect(error.code == .notScheduled)
        }
    }

    @Test func technicianMayPostExactlyTheContractsList() {
        #expect(
            VisitEventType.postableByTechnician == [
                .enRoute, .nearby, .onSite, .finishing, .completed, .failed, .progress,
            ])
        #expect(!VisitEventType.cancelled.technicianMayPost)
        #expect(!VisitEventType.reassigned.technicianMayPost)
        #expect(!VisitEventType.scheduled.technicianMayPost)
    }
}
