import Foundation
import Runtime

// `livevisits` — one executable; each command lives in its own file. Exit codes: 0 success,
// 1 runtime failure, 2 usage error; errors go to stderr as one line.

// Before any thread starts allocating: large blocks given back when freed (`MallocTuning`).
MallocTuning.apply(environment: ProcessInfo.processInfo.environment)
let arguments = Array(CommandLine.arguments.dropFirst())
let code = await CommandLineInterface.run(arguments)
exit(code)
