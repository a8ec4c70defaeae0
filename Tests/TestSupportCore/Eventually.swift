import Foundation

/// Thrown by `eventually` when its condition did not hold in time; names what the test waited for.
public struct WaitTimedOut: Error, CustomStringConvertible {
    public let what: String
    public let seconds: Double
    public let location: String
    public init(what: String, seconds: Double, location: String) {
        self.what = what
        self.seconds = seconds
        self.location = location
    }
    public var description: String { "\(location): timed out after \(seconds) s waiting for \(what)" }
}

/// Polls `condition` until it holds; throws `WaitTimedOut` naming `what` when `seconds` pass first, so a
/// test that waits on something that never happens fails instead of hanging. The deadline is a bound
/// against hangs, not a measurement: choose it generously (a loaded machine is slow), and never assert on
/// how long the wait took. `between` runs after each failed poll (to nudge the code under test, e.g. wake a
/// worker or advance a manual clock).
public func eventually(
    _ what: @autoclosure () -> String, within seconds: Double = 60, pollingEvery interval: Double = 0.01,
    fileID: String = #fileID, line: Int = #line,
    between: () async throws -> Void = {},
    _ condition: () async throws -> Bool
) async throws {
    let deadline = ContinuousClock.now.advanced(by: .milliseconds(Int64(seconds * 1000)))
    while true {
        if try await condition() { return }
        guard ContinuousClock.now < deadline else {
            throw WaitTimedOut(what: what(), seconds: seconds, location: "\(fileID):\(line)")
        }
        try await between()
        try await Task.sleep(nanoseconds: UInt64(interval * 1_000_000_000))
    }
}
