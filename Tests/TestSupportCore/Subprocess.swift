import Foundation
import Runtime

/// The tests' way to run a command to completion: Runtime's `ChildProcess` (the one place the project
/// starts a child), under the name the tests have used.
public enum Subprocess {
    public typealias Outcome = ChildProcess.Outcome

    public static func run(_ path: String, _ arguments: [String], environment: [String: String]? = nil) async throws -> Outcome {
        try await ChildProcess(path, arguments, environment: environment).run()
    }

    public static func runBlocking(_ path: String, _ arguments: [String], environment: [String: String]? = nil) throws -> Outcome
    {
        try ChildProcess(path, arguments, environment: environment).runBlocking()
    }
}

/// Runs blocking work (a raw `PostgresConnection`, `usleep`) on a thread outside Swift's cooperative pool.
public func onOwnThread<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        Thread.detachNewThread { continuation.resume(with: Result { try body() }) }
    }
}
