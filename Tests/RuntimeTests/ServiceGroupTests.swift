import Runtime
import Synchronization
import Testing

/// The service group's ordered shutdown: later stages stop first, and an earlier stage keeps running
/// until every service of the later ones has returned.
@Suite(.timeLimit(.minutes(1))) struct ServiceGroupTests {
    @Test func laterStagesStopFirstAndEarlierOnesWaitForThem() async throws {
        let journal = Journal()
        let drain = Gate()
        let transport = TestService(name: "transport", journal: journal)
        let worker = TestService(name: "worker", journal: journal, drain: drain)
        let server = TestService(name: "server", journal: journal)
        let group = ServiceGroup(stages: [[transport], [worker, server]], signals: nil)
        let running = Task { try await group.run() }
        await journal.waitFor("transport started")
        await journal.waitFor("worker started")
        await journal.waitFor("server started")

        running.cancel()  // a graceful stop, as SIGTERM asks for
        await journal.waitFor("worker draining")
        await journal.waitFor("server stopped")
        #expect(
            !journal.entries.contains("transport stopped"), "the transport closed under a draining worker: \(journal.entries)")
        drain.open()
        try await running.value

        let entries = journal.entries
        let workerStopped = try #require(entries.firstIndex(of: "worker stopped"))
        let transportStopped = try #require(entries.firstIndex(of: "transport stopped"))
        #expect(workerStopped < transportStopped, "\(entries)")
    }

    @Test func aFailingServiceStopsTheOthersInOrderAndItsErrorIsRethrown() async throws {
        let journal = Journal()
        let transport = TestService(name: "transport", journal: journal)
        let failing = TestService(name: "listener", journal: journal, failure: TestFailure())
        let group = ServiceGroup(stages: [[transport], [failing]], signals: nil)
        await #expect(throws: TestFailure.self) { try await group.run() }
        #expect(journal.entries.last == "transport stopped")
    }

    @Test func aServiceEndingOnItsOwnEndsTheGroup() async throws {
        let journal = Journal()
        let transport = TestService(name: "transport", journal: journal)
        let oneShot = TestService(name: "one-shot", journal: journal, endsAtOnce: true)
        try await ServiceGroup(stages: [[transport], [oneShot]], signals: nil).run()
        #expect(journal.entries.last == "transport stopped")
    }
}

struct TestFailure: Error {}

/// A service that runs until cancelled (or fails, or ends at once), journaling what it does; with a
/// `drain` it waits for that gate after cancellation, like a worker finishing the sends on the wire.
struct TestService: Service {
    let name: String
    let journal: Journal
    var drain: Gate? = nil
    var failure: TestFailure? = nil
    var endsAtOnce = false

    func run() async throws {
        journal.append("\(name) started")
        if let failure { throw failure }
        if endsAtOnce { return }
        let cancelled = Gate()
        await withTaskCancellationHandler {
            await cancelled.wait()
        } onCancel: {
            cancelled.open()
        }
        if let drain {
            journal.append("\(name) draining")
            await drain.wait()
        }
        journal.append("\(name) stopped")
    }
}

/// A one-way gate: `wait()` returns once `open()` was called (before or after).
final class Gate: Sendable {
    private let state = Mutex<(open: Bool, waiters: [CheckedContinuation<Void, Never>])>((false, []))

    func open() {
        let waiters = state.withLock { s -> [CheckedContinuation<Void, Never>] in
            s.open = true
            defer { s.waiters = [] }
            return s.waiters
        }
        for waiter in waiters { waiter.resume() }
    }

    func wait() async {
        await withCheckedContinuation { continuation in
            let isOpen = state.withLock { s -> Bool in
                if !s.open { s.waiters.append(continuation) }
                return s.open
            }
            if isOpen { continuation.resume() }
        }
    }
}

/// What the services did, in order; `waitFor` returns once an entry is there.
final class Journal: Sendable {
    private let state = Mutex<(entries: [String], waiters: [(String, CheckedContinuation<Void, Never>)])>(([], []))

    var entries: [String] { state.withLock { $0.entries } }

    func append(_ entry: String) {
        let ready = state.withLock { s -> [CheckedContinuation<Void, Never>] in
            s.entries.append(entry)
            let ready = s.waiters.filter { $0.0 == entry }.map(\.1)
            s.waiters.removeAll { $0.0 == entry }
            return ready
        }
        for waiter in ready { waiter.resume() }
    }

    func waitFor(_ entry: String) async {
        await withCheckedContinuation { continuation in
            let present = state.withLock { s -> Bool in
                if !s.entries.contains(entry) { s.waiters.append((entry, continuation)) }
                return s.entries.contains(entry)
            }
            if present { continuation.resume() }
        }
    }
}
