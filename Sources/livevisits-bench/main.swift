import Foundation

// A small dispatcher: each benchmark lives in its own file and registers here by name.
let benchmarks: [String: (summary: String, run: ([String]) async throws -> Void)] = [
    "append": (AppendBenchmark.summary, { try await AppendBenchmark(arguments: $0).run() }),
    "apns": (APNsClientBenchmark.summary, { try await APNsClientBenchmark(arguments: $0).run() }),
    "outbox": (OutboxBenchmark.summary, { try await OutboxBenchmark.main(arguments: $0) }),
    "replay": (ReplayBenchmark.summary, { try await ReplayBenchmark(arguments: $0).run() }),
    "api": (APIBenchmark.summary, { try await APIBenchmark(arguments: $0).run() }),
]

let arguments = Array(CommandLine.arguments.dropFirst())
guard let name = arguments.first, let benchmark = benchmarks[name] else {
    var usage = "usage: livevisits-bench <benchmark> [options]\n"
    for key in benchmarks.keys.sorted() { usage += "  \(key)  \(benchmarks[key]!.summary)\n" }
    FileHandle.standardError.write(Data(usage.utf8))
    exit(arguments.isEmpty || arguments.first == "--help" ? 0 : 2)
}
do {
    try await benchmark.run(Array(arguments.dropFirst()))
} catch let error as BenchmarkUsageError {
    FileHandle.standardError.write(Data("livevisits-bench: \(error.message)\n".utf8))
    exit(2)
} catch {
    FileHandle.standardError.write(Data("livevisits-bench: \(error)\n".utf8))
    exit(1)
}
