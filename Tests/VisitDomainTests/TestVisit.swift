import Foundation
import Testing

@testable import VisitDomain

/// Sample visits and histories shared by the tests (the seed's Sam, Alex and 12 Elm Row).
enum TestVisit {
    static let t0 = 1_789_990_000

    static let technician = Technician(
        id: "t-42", name: "Sam", avatarSymbol: "person.crop.circle", vanDescription: "White van, blue stripe")

    static func scheduled(
        visitId: String = "v-1001", window: ArrivalWindow = ArrivalWindow(start: 1_790_000_300, end: 1_790_000_900),
        kilometres: Double = 14.0
    ) -> VisitEvent {
        .scheduled(
            VisitScheduled(
                customerId: "c-7",
                attributes: ServiceVisitAttributes(
                    visitId: visitId, customerFirstName: "Alex", serviceAddress: "12 Elm Row",
                    jobSummary: "Boiler check"),
                technician: technician, arrivalWindow: window, kilometresAway: kilometres))
    }

    /// Records `events` one after another, version 1…n, at the given times.
    static func history(_ events: [(VisitEvent, Int)]) -> [RecordedVisitEvent] {
        events.enumerated().map { RecordedVisitEvent($1.0, version: $0 + 1, recordedAt: $1.1) }
    }

    /// Folds a history that is known to be consistent.
    static func fold(_ events: [(VisitEvent, Int)]) throws -> VisitState {
        try #require(try VisitDecider.fold(history(events)))
    }

    /// Accepts events one by one through `VisitDecider.accept`, `seconds` apart from `t0`.
    static func accepted(
        _ events: [VisitEvent], rules: ProjectionRules = .contractDefault, start: Int = t0, step: Int = 60
    ) throws -> [AcceptedVisitEvent] {
        var state: VisitState?
        var results: [AcceptedVisitEvent] = []
        for (index, event) in events.enumerated() {
            let result = try VisitDecider.accept(event, given: state, recordedAt: start + index * step, rules: rules)
            state = result.state
            results.append(result)
        }
        return results
    }

    /// Events that lead from nothing to `status`.
    static func path(to status: VisitStatus) -> [VisitEvent] {
        switch status {
        case .scheduled: [scheduled()]
        case .enRoute: [scheduled(), .enRoute(.none)]
        case .nearby: [scheduled(), .enRoute(.none), .nearby(ArrivalUpdate(kilometresAway: 1.2))]
        case .onSite: [scheduled(), .enRoute(.none), .onSite]
        case .finishing: [scheduled(), .onSite, .finishing(.none)]
        case .completed: [scheduled(), .onSite, .completed]
        case .cancelled: [scheduled(), .cancelled(reason: "customer asked")]
        case .failed: [scheduled(), .failed(reason: "Van broke down")]
        }
    }

    /// One sample event of each type, as posted to a visit.
    static func sample(_ type: VisitEventType) -> VisitEvent {
        switch type {
        case .scheduled: scheduled()
        case .enRoute: .enRoute(.none)
        case .nearby: .nearby(ArrivalUpdate(kilometresAway: 2))
        case .onSite: .onSite
        case .finishing: .finishing(.none)
        case .completed: .completed
        case .cancelled: .cancelled(reason: nil)
        case .failed: .failed(reason: "No access to the boiler")
        case .progress: .progress(ArrivalUpdate(kilometresAway: 3))
        case .reassigned:
            .reassigned(
                Technician(id: "t-7", name: "Kim", avatarSymbol: "person.fill", vanDescription: "Red van"), .none)
        }
    }

    /// A fixture file's bytes.
    static func fixture(_ name: String) throws -> Data {
        let url = try #require(Bundle.module.url(forResource: "Fixtures/\(name)", withExtension: nil))
        return try Data(contentsOf: url)
    }

    /// The repository's top level (for `Projections/rules.json`).
    static var repositoryRoot: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
    }
}
