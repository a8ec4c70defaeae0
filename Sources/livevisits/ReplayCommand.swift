import Foundation
import Postgres
import VisitDomain
import VisitProjections

/// `livevisits replay [PROJECTION]`: rebuilds a projection from the event log while the API keeps serving.
/// Prints progress and events/s; never sends or enqueues a push.
enum ReplayCommand {
    static let projections = [VisitReadModel.name]

    static func run(_ arguments: [String]) async throws {
        guard arguments.count <= 1 else { throw UsageError("usage: livevisits replay [PROJECTION]") }
        let selected = arguments.first.map { [$0] } ?? projections
        for name in selected where !projections.contains(name) {
            throw UsageError("unknown projection '\(name)'; known: \(projections.joined(separator: ", "))")
        }
        let configuration = Configuration()
        let pool = PostgresPool(configuration: PostgresConfiguration(url: try configuration.databaseURL(), size: 2))
        defer { Task { await pool.close() } }
        let rules = try ProjectionRules.load(directory: configuration.projectionsDirectory)
        for name in selected {
            let report = try await rebuild(name, pool: pool, configuration: configuration, rules: rules)
            Console.line(report)
        }
    }

    /// Rebuilds one projection; returns the summary line.
    static func rebuild(_ name: String, pool: PostgresPool, configuration: Configuration, rules: ProjectionRules) async throws -> String {
        let readModel = try VisitReadModel(projectionsDirectory: configuration.projectionsDirectory, rules: rules)
        let report = try await VisitReplay(pool: pool, readModel: readModel).run { progress in
            Console.line("replay \(name): \(progress.events) events, \(progress.visits) visits, \(Int(progress.eventsPerSecond)) events/s")
        }
        return "replay \(name): done, \(report.events) events, \(report.visits) visits, "
            + "\(report.carriedOver) carried over from live appends, \(String(format: "%.2f", report.seconds)) s, "
            + "\(Int(report.eventsPerSecond)) events/s"
    }
}
