import Foundation
import VisitDomain

/// Reading the rules from the projections directory (contract §3: `LIVEVISITS_PROJECTIONS_DIR`, default
/// `./Projections`). The file I/O lives here, next to the read model's own SQL from the same directory;
/// the domain only parses the bytes (`ProjectionRules.parse`).
extension ProjectionRules {
    /// The rules file's name inside the projections directory.
    public static let fileName = "rules.json"

    /// The environment variable naming the projections directory.
    public static let directoryVariable = "LIVEVISITS_PROJECTIONS_DIR"

    /// The projections directory: `$LIVEVISITS_PROJECTIONS_DIR`, default `./Projections`.
    public static func directory(environment: [String: String] = ProcessInfo.processInfo.environment) -> URL {
        let path = environment[directoryVariable].flatMap { $0.isEmpty ? nil : $0 } ?? "./Projections"
        return URL(fileURLWithPath: path, isDirectory: true)
    }

    /// Reads `rules.json` from the directory the environment names (contract §3).
    public static func load(environment: [String: String] = ProcessInfo.processInfo.environment)
        throws(ProjectionRulesError) -> ProjectionRules
    {
        try load(directory: directory(environment: environment))
    }

    /// Reads `rules.json` from a projections directory (`$LIVEVISITS_PROJECTIONS_DIR`,
    /// default `./Projections`).
    public static func load(directory: URL) throws(ProjectionRulesError) -> ProjectionRules {
        try load(from: directory.appendingPathComponent(fileName))
    }

    /// Reads and validates one rules file.
    public static func load(from url: URL) throws(ProjectionRulesError) -> ProjectionRules {
        let data: Data
        do {
            data = try Data(contentsOf: url)
        } catch {
            throw ProjectionRulesError(
                code: .unreadable, keyPath: "", reason: "cannot read \(url.path): \(error.localizedDescription)")
        }
        return try parse(data)
    }
}
