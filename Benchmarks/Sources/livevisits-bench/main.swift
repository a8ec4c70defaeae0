import Foundation
import Runtime

// A small dispatcher: each benchmark lives in its own file and registers here by name; every benchmark
// parses its options with Runtime's `CommandSyntax` (so each answers `--help`).
let benchmarks: [(name: String, summary: String, run: ([String]) async throws -> Void)] = [
    ("api", APIBenchmark.summary, { try await APIBenchmark(arguments: $0).run() }),
    ("apns", APNsClientBenchmark.summary, { try await APNsClientBenchmark(arguments: $0).run() }),
    ("append", AppendBenchmark.summary, { try await AppendBenchmark(arguments: $0).run() }),
    ("big-store", BigStoreBenchmark.summary, { try await BigStoreBenchmark(arguments: $0).run() }),
    ("channels", ChannelsBenchmark.summary, { try await ChannelsBenchmark.main(arguments: $0) }),
    ("flat-cost", FlatCostBenchmark.summary, { try await FlatCostBenchmark(arguments: $0).run() }),
    ("fleet-day", FleetDayBenchmark.summary, { try await FleetDayBenchmark(arguments: $0).run() }),
    ("location", LocationBenchmark.summary, { try await LocationBenchmark(arguments: $0).run() }),
    ("outbox", OutboxBenchmark.summary, { try await OutboxBenchmark.main(arguments: $0) }),
    ("personal-data", PersonalDataBenchmark.summary, { try await PersonalDataBenchmark(arguments: $0).run() }),
    ("prune", PruneBenchmark.summary, { try await PruneBenchmark(arguments: $0).run() }),
    ("pipeline", PipelineBenchmark.summary, { try await PipelineBenchmark(arguments: $0).run() }),
    ("replay", ReplayBenchmark.summary, { try await ReplayBenchmark(arguments: $0).run() }),
    ("scale", ScaleBenchmark.summary, { try await ScaleBenchmark(arguments: $0).run() }),
    ("seed", SeedBenchmark.summary, { try await SeedBenchmark(arguments: $0).run() }),
    ("slow-clients", SlowClientsBenchmark.summary, { try await SlowClientsBenchmark(arguments: $0).run() }),
    ("technicians", TechniciansBenchmark.summary, { try await TechniciansBenchmark(arguments: $0).run() }),
    ("tracking", TrackingBenchmark.summary, { try await TrackingBenchmark(arguments: $0).run() }),
    ("webhooks", WebhooksBenchmark.summary, { try await WebhooksBenchmark.main(arguments: $0) }),
    ("webhook-receiver", WebhookReceiverProcess.summary, { try await WebhookReceiverProcess.main(arguments: $0) }),
]
let menu = CommandMenu(command: "livevisits-bench", entries: benchmarks.map { .init($0.name, "[options]", $0.summary) })

do {
    let (name, rest) = try menu.select(Array(CommandLine.arguments.dropFirst()))
    try await benchmarks.first { $0.name == name }!.run(rest)
} catch let help as HelpRequest {
    print(help.usage)
    exit(0)
} catch let error as UsageError {
    FileHandle.standardError.write(Data("\(error.message)\n".utf8))
    exit(2)
} catch let error as BenchmarkUsageError {
    FileHandle.standardError.write(Data("livevisits-bench: \(error.message)\n".utf8))
    exit(2)
} catch {
    FileHandle.standardError.write(Data("livevisits-bench: \(error)\n".utf8))
    exit(1)
}
