import Testing

@testable import VisitDomain

/// The body of `POST /v1/technicians/{id}/delay` and the `progress` a delay makes of each visit.
struct TechnicianDelayTests {
    func parse(_ body: String) throws(VisitInputError) -> TechnicianDelay { try TechnicianDelay.parse(Array(body.utf8)) }

    @Test func acceptsMinutesFromOneTo720AndAnOptionalReason() throws {
        #expect(try parse(#"{"minutes": 1}"#) == TechnicianDelay(minutes: 1))
        #expect(
            try parse(#"{"minutes": 720.0, "reason": "Van\nbroke down"}"#)
                == TechnicianDelay(minutes: 720, reason: "Van\nbroke down"))
        #expect(try parse(#"{"minutes": 30, "reason": null}"#) == TechnicianDelay(minutes: 30))
    }

    @Test func refusesBadMinutesNamingTheField() {
        let cases: [(String, VisitInputError.Code)] = [
            (#"{"minutes": 0}"#, .invalidValue), (#"{"minutes": 721}"#, .invalidValue), (#"{"minutes": -1}"#, .invalidValue),
            (#"{"minutes": 1.5}"#, .invalidValue), (#"{"minutes": 1e300}"#, .invalidValue), (#"{"minutes": "5"}"#, .wrongType),
            (#"{"minutes": true}"#, .wrongType), (#"{}"#, .missingField),
        ]
        for (body, code) in cases {
            #expect(throws: VisitInputError.self, "\(body)") { try parse(body) }
            do {
                _ = try parse(body)
            } catch {
                #expect(error.code == code, "\(body)")
                #expect(error.field == "minutes", "\(body)")
            }
        }
    }

    @Test func refusesAReasonThatFreeTextMayNotBe() {
        for body in [
            #"{"minutes": 5, "reason": "a\u0000b"}"#, #"{"minutes": 5, "reason": "\u001b[2J"}"#,
            #"{"minutes": 5, "reason": "\u2066x"}"#, #"{"minutes": 5, "reason": ""}"#, #"{"minutes": 5, "reason": 5}"#,
        ] {
            do {
                _ = try parse(body)
                Issue.record("accepted \(body)")
            } catch {
                #expect(error.field == "reason", "\(body)")
            }
        }
        #expect(throws: VisitInputError.self) { try parse(#"{"minutes": 5, "late": true}"#) }
        #expect(throws: VisitInputError.self) { try parse("[5]") }
    }

    @Test func movesTheWholeWindowOfVisitsNotReachedYet() throws {
        let delay = TechnicianDelay(minutes: 20, reason: "Traffic")
        let window = ArrivalWindow(start: 1_790_000_300, end: 1_790_000_900)
        let moved = VisitEvent.progress(
            ArrivalUpdate(arrivalWindow: ArrivalWindow(start: window.start + 1200, end: window.end + 1200)), reason: "Traffic")
        let paths: [(VisitStatus, [VisitEvent])] = [
            (.scheduled, []), (.enRoute, [.enRoute(.none)]), (.nearby, [.nearby(.none)]), (.onSite, [.onSite]),
            (.finishing, [.onSite, .finishing(.none)]), (.completed, [.onSite, .completed]),
            (.cancelled, [.cancelled(reason: nil)]), (.failed, [.failed(reason: "No access")]),
        ]
        for (status, events) in paths {
            let history = [(TestVisit.scheduled(window: window), TestVisit.t0)] + events.map { ($0, TestVisit.t0 + 60) }
            let state = try TestVisit.fold(history)
            #expect(state.status == status)
            let event = delay.event(for: state, technicianId: "t-42")
            #expect(event == (TechnicianDelay.delayedStatuses.contains(status) ? moved : nil), "\(status)")
            #expect(delay.event(for: state, technicianId: "t-7") == nil, "another technician's \(status) visit")
        }
        // The progress keeps the status and moves start and end alike.
        let enRoute = try TestVisit.fold([
            (TestVisit.scheduled(window: window), TestVisit.t0), (.enRoute(.none), TestVisit.t0 + 60),
        ])
        let accepted = try VisitDecider.accept(
            try #require(delay.event(for: enRoute, technicianId: "t-42")), given: enRoute, recordedAt: TestVisit.t0 + 120,
            rules: .contractDefault)
        #expect(accepted.state.status == .enRoute)
        #expect(accepted.state.arrivalWindow == ArrivalWindow(start: window.start + 1200, end: window.end + 1200))
        #expect(accepted.state.reason == nil, "a delay's reason is the event's, not shown as a failure's")
    }
}
