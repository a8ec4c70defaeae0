import Foundation
import Runtime

// `livevisits` — one executable; each command lives in its own file. Exit codes: 0 success,
// 1 runtime failure, 2 usage error; errors go to stderr as one line.

// Before any thread starts allocating: fewer arenas, and large blocks given back (`MallocTuning`).
MallocTuning.apply(
    environment: ProcessInfo.processInfo.environment, cores: ProcessInfo.processInfo.activeProcessorCount)
let arguments = Array(CommandLine.arguments.dropFirst())
let code = await CommandLineInterface.run(arguments)
exit(code)
