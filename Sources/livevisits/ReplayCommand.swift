import Foundation
import Postgres
import Runtime
import VisitDomain
import VisitProjections

/// `livevisits replay [PROJECTION]`: rebuilds a projection from the event log while the API keeps serving.
/// Prints progress and events/s; never sends or enqueues a push.
enum ReplayCommand {
    static let projections = VisitReplay.Projection.all.map(\.name)

    static let syntax = CommandSyntax(
        command: "livevisits replay",
        summary: "Rebuilds a projection from the event log while the API keeps serving; sends no push.",
        positionals: "[PROJECTION]", positionalCount: 0...1,
        details: "PROJECTION: one of \(projections.joined(separator: ", ")) (default: all).")

    static func run(_ arguments: [String]) async throws {
        let parsed = try syntax.parse(arguments)
        let selected = parsed.positionals.first.map { [$0] } ?? projections
        for name in selected where !projections.contains(name) {
            throw syntax.mistake("unknown projection '\(name)'; known: \(projections.joined(separator: ", "))")
        }
        let configuration = Configuration()
        let url = try configuration.databaseURL()
        let rules = try ProjectionRules.load(directory: configuration.projectionsDirectory)
        try await PostgresPool.withPool(PostgresConfiguration(url: url, size: 2)) { pool in
            for name in selected {
                let report = try await rebuild(name, pool: pool, configuration: configuration, rules: rules)
                Console.line(report)
            }
        }
    }

    /// Rebuilds one projection; returns the summary line.
    static func rebuild(_ name: String, pool: PostgresPool, configuration: Configuration, rules: ProjectionRules) async throws
        -> String
    {
        let readModel = try VisitReadModel(projectionsDirectory: configuration.projectionsDirectory, rules: rules)
        guard let projection = VisitReplay.Projection.named(name) else {
            throw syntax.mistake("unknown projection '\(name)'; known: \(projections.joined(separator: ", "))")
        }
        let report = try await VisitReplay(pool: pool, readModel: readModel, projection: projection).run { progress in
            Console.line(
                "replay \(name): \(progress.events) events, \(progress.visits) visits, \(Int(progress.eventsPerSecond)) events/s")
        }
        return "replay \(name): done, \(report.events) events, \(report.visits) visits, "
            + "\(report.carriedOver) carried over from live appends, \(String(format: "%.2f", report.seconds)) s, "
            + "\(Int(report.eventsPerSecond)) events/s"
    }
}
