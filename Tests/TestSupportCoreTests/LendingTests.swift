import Synchronization
import TestSupportCore
import Testing

/// `withResource` and `withRunning`: what a test borrows is closed, awaited, once the body returned or threw,
/// inner before outer; nothing is closed that was not opened.
@Suite struct LendingTests {
    struct Boom: Error, Equatable {}

    /// What happened, in order. `close` records through an actor hop, so a close that is not awaited has not
    /// recorded yet when the lending call returns.
    final class Log: Sendable {
        private let entries = Mutex<[String]>([])
        func add(_ entry: String) { entries.withLock { $0.append(entry) } }
        var all: [String] { entries.withLock { $0 } }
    }
    actor Recorder {
        func record(_ entry: String, in log: Log) { log.add(entry) }
    }

    func lend<Result>(
        _ name: String, _ log: Log, _ recorder: Recorder, _ body: (String) async throws -> Result
    ) async throws -> Result {
        try await withResource(
            {
                log.add("open \(name)")
                return name
            }, close: { await recorder.record("close \($0)", in: log) }, body)
    }

    @Test func aReturningBodyGetsItsValueAndTheResourceIsClosedBeforeTheCallReturns() async throws {
        let (log, recorder) = (Log(), Recorder())
        let value = try await lend("a", log, recorder) { name in
            log.add("use \(name)")
            return 42
        }
        #expect(value == 42)
        #expect(log.all == ["open a", "use a", "close a"])
    }

    @Test func aThrowingBodyClosesFirstAndItsErrorArrives() async throws {
        let (log, recorder) = (Log(), Recorder())
        await #expect(throws: Boom.self) {
            try await lend("a", log, recorder) { _ in throw Boom() }
        }
        #expect(log.all == ["open a", "close a"])
    }

    @Test func nestedResourcesCloseInReverseOrderAlsoOnThrow() async throws {
        let (log, recorder) = (Log(), Recorder())
        await #expect(throws: Boom.self) {
            try await lend("outer", log, recorder) { _ in
                try await lend("inner", log, recorder) { _ in throw Boom() }
            }
        }
        #expect(log.all == ["open outer", "open inner", "close inner", "close outer"])
    }

    @Test func whatFailedToOpenIsNotClosed() async throws {
        let log = Log()
        await #expect(throws: Boom.self) {
            try await withResource({ () throws -> String in throw Boom() }, close: { log.add("close \($0)") }) { _ in
                log.add("body")
            }
        }
        #expect(log.all.isEmpty)
    }

    @Test func aRunningServiceIsCancelledAndHasEndedWhenTheBodyThrows() async throws {
        let log = Log()
        var task: Task<Void, any Error>?
        await #expect(throws: Boom.self) {
            try await withRunning({
                await withTaskCancellationHandler {
                    await AsyncStream<Never> { _ in }.first { _ in true }
                } onCancel: {
                }
                log.add("service ended")
            }) { running in
                task = running
                throw Boom()
            }
        }
        #expect(task?.isCancelled == true)
        #expect(log.all == ["service ended"])
    }
}
