import Foundation

/// What the benchmarks take from where they run, each found in one way, with one message when missing.
enum BenchmarkEnvironment {
    /// The cluster the benchmarks make their scratch databases in: `LIVEVISITS_DATABASE_URL`.
    static func serverURL() throws -> String {
        guard let url = ProcessInfo.processInfo.environment["LIVEVISITS_DATABASE_URL"], !url.isEmpty else {
            throw BenchmarkUsageError(message: "set LIVEVISITS_DATABASE_URL (export LIVEVISITS_DATABASE_URL=$(scripts/pg url))")
        }
        return url
    }

    /// The `livevisits` next to this binary, which the benchmarks' package builds there.
    static func livevisits() throws -> URL {
        let executable = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
            .deletingLastPathComponent().appendingPathComponent("livevisits")
        guard FileManager.default.isExecutableFile(atPath: executable.path) else {
            throw BenchmarkUsageError(message: "no livevisits next to this binary (build it with scripts/bench)")
        }
        return executable
    }
}
