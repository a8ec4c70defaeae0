import Foundation
import Synchronization
import TestSupportCore
import Testing

@testable import HTTPServer

#if canImport(Glibc)
    import Glibc
#endif

/// Handler tasks run where they are started and where their waits end, without hops through Swift's pool.
@Suite(.timeLimit(.minutes(2))) struct InlineTaskExecutorTests {
    /// A thread-safe log of steps, with the thread each ran on.
    final class Steps: Sendable {
        private let entries = Mutex<[(String, pthread_t)]>([])
        func record(_ step: String) { entries.withLock { $0.append((step, pthread_self())) } }
        var names: [String] { entries.withLock { $0.map(\.0) } }
        func thread(of step: String) -> pthread_t? { entries.withLock { $0.first { $0.0 == step }?.1 } }
        func has(_ step: String) -> Bool { entries.withLock { $0.contains { $0.0 == step } } }
        /// Waits (without driving anything) until `step` is recorded; throws when it never is.
        func wait(for step: String) async throws {
            try await eventually("step \(step)", pollingEvery: 0.001) { has(step) }
        }
    }

    @Test func aTaskRunsOnTheStartingThreadBeforeItsCreationReturns() async throws {
        let steps = Steps()
        let thread = Thread {
            steps.record("starter")
            _ = Task(executorPreference: InlineTaskExecutor.shared) { steps.record("task") }
            steps.record("after creation")
        }
        thread.start()
        try await steps.wait(for: "after creation")
        #expect(steps.names == ["starter", "task", "after creation"])
        #expect(steps.thread(of: "task").map { pthread_equal($0, steps.thread(of: "starter")!) != 0 } == true)
    }

    /// A task started (or resumed) by a task of this executor waits for the current one to give up its
    /// thread, instead of running nested inside it.
    @Test func aTaskStartedFromAnInlineTaskRunsAfterIt() async throws {
        let steps = Steps()
        _ = Task(executorPreference: InlineTaskExecutor.shared) {
            steps.record("outer begins")
            _ = Task(executorPreference: InlineTaskExecutor.shared) { steps.record("inner") }
            steps.record("outer ends")
        }
        try await steps.wait(for: "inner")
        #expect(steps.names == ["outer begins", "outer ends", "inner"])
        #expect(pthread_equal(steps.thread(of: "inner")!, steps.thread(of: "outer begins")!) != 0)
    }

    /// A cancellation handler that ends the task's wait (as a withdrawn command or `Task.sleep` does) runs
    /// inside `Task.cancel()`, under the runtime's lock on the task: the task must go on only after
    /// `cancel()` has returned, which `deferringJobs` ensures.
    @Test func aTaskResumedByItsCancellationGoesOnAfterCancelReturns() async throws {
        let steps = Steps()
        let waiting = Mutex<CheckedContinuation<Void, Never>?>(nil)
        let task = Task(executorPreference: InlineTaskExecutor.shared) {
            await withTaskCancellationHandler {
                await withCheckedContinuation { continuation in
                    waiting.withLock { $0 = continuation }
                    steps.record("waiting")
                }
            } onCancel: {
                waiting.withLock { w in
                    defer { w = nil }
                    return w
                }?.resume()
            }
            steps.record("resumed")
        }
        try await steps.wait(for: "waiting")
        let canceller = Thread {
            InlineTaskExecutor.deferringJobs {
                task.cancel()
                steps.record("cancel returned")
            }
        }
        canceller.start()
        try await steps.wait(for: "resumed")
        #expect(steps.names == ["waiting", "cancel returned", "resumed"])
    }

    /// After a wait, the task goes on on the thread that ended the wait.
    @Test func aResumedTaskGoesOnOnTheResumingThread() async throws {
        let steps = Steps()
        let gate = Gate()
        _ = Task(executorPreference: InlineTaskExecutor.shared) {
            steps.record("waiting")
            await gate.wait()
            steps.record("after the wait")
        }
        try await steps.wait(for: "waiting")
        let resumer = Thread {
            steps.record("resumer")
            gate.open()
        }
        resumer.start()
        try await steps.wait(for: "after the wait")
        #expect(steps.names == ["waiting", "resumer", "after the wait"])
        #expect(pthread_equal(steps.thread(of: "after the wait")!, steps.thread(of: "resumer")!) != 0)
    }
}

extension InlineTaskExecutorTests {
    /// The name of the calling thread (libmicrohttpd names its polling threads `MHD-…`).
    static func threadName() -> String {
        ((try? String(contentsOfFile: "/proc/thread-self/comm", encoding: .utf8)) ?? "").trimmingCharacters(in: .newlines)
    }

    /// A handler that does not wait answers from libmicrohttpd's own thread: no hop through Swift's pool.
    @Test func aHandlerThatDoesNotWaitRunsOnTheServersThread() async throws {
        let seen = Mutex<String?>(nil)
        let running = try startServer { _ in
            seen.withLock { $0 = InlineTaskExecutorTests.threadName() }
            return .json(body: Data(#"{"ok":true}"#.utf8))
        }
        defer { running.task.cancel() }
        #expect(try await get(running.port, "/").status == 200)
        let name = seen.withLock { $0 } ?? ""
        #expect(name.hasPrefix("MHD"), "handler ran on \(name)")
    }
}
