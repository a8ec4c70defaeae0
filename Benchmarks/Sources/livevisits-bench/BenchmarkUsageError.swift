/// A bad command line: printed on one line, exit code 2.
struct BenchmarkUsageError: Error {
    let message: String
}
