import Foundation
import Runtime
import TestSupportCore
import Testing

@testable import HTTPServer

/// Handler deadlines and graceful shutdown.
@Suite(.timeLimit(.minutes(2))) struct HTTPServerLifecycleTests {
    @Test func handlerThatNeverReturnsGets503Timeout() async throws {
        let clock = ManualClock(now: 1_000)
        let (started, startedSignal) = AsyncStream.makeStream(of: Void.self)
        let gate = Gate()
        let running = try startServer(.test { $0.requestTimeout = 5 }, clock: clock) { request in
            if request.rawPath == "/hang" {
                startedSignal.yield()
                await gate.wait()  // ignores cancellation: never returns on its own
            }
            return .json(body: Data(#"{"ok":true}"#.utf8))
        }
        defer {
            gate.open()
            running.task.cancel()
        }
        let port = running.port
        async let response = get(port, "/hang")
        var iterator = started.makeAsyncIterator()
        _ = await iterator.next()
        clock.advance(by: 6)
        let answer = try await response
        #expect(answer.status == 503)
        #expect(answer.errorCode == "timeout")
        // The server still serves, and the late handler's answer goes nowhere.
        #expect(try await get(port, "/fine").status == 200)
        gate.open()
        #expect(try await get(port, "/fine").status == 200)
        try await running.stop()
    }

    /// A handler that moves its deadline (a long poll) is not answered 503 at the server's request timeout,
    /// but at the deadline it set.
    @Test func aHandlerThatMovesItsDeadlineIsTimedOutOnlyThen() async throws {
        let clock = ManualClock(now: 1_000)
        let (started, startedSignal) = AsyncStream.makeStream(of: Void.self)
        let gate = Gate()
        try await withServer(.test { $0.requestTimeout = 5 }, clock: clock) { _ in
            RequestDeadline.current?.extend(toSecondsFromNow: 30)
            startedSignal.yield()
            await gate.wait()  // ignores cancellation
            return .json(body: Data(#"{"ok":true}"#.utf8))
        } _: { running in
            defer { gate.open() }
            var iterator = started.makeAsyncIterator()
            async let held = get(running.port, "/held")
            _ = await iterator.next()
            clock.advance(by: 6)
            running.server.answerOverdue()  // what the server's tick does
            async let late = get(running.port, "/late")
            _ = await iterator.next()
            clock.advance(by: 25)  // 31 s after the first, 25 s after the second request arrived
            running.server.answerOverdue()
            let first = try await held.status
            gate.open()
            let second = try await late.status
            #expect(first == 503, "answered at the deadline it set")
            #expect(second == 200, "answered 503 at the server's 5 s, before the 30 s it set")
        }
    }

    @Test func cancellationReachesTheTimedOutHandler() async throws {
        let clock = ManualClock(now: 0)
        let (events, signal) = AsyncStream.makeStream(of: String.self)
        let cancelled = Gate()
        let running = try startServer(.test { $0.requestTimeout = 1 }, clock: clock) { _ in
            signal.yield("started")
            // Holds until its task is cancelled (the gate opens from the cancellation handler).
            await withTaskCancellationHandler {
                await cancelled.wait()
            } onCancel: {
                cancelled.open()
            }
            signal.yield("cancelled")
            return HTTPResponse(status: 200)
        }
        defer { running.task.cancel() }
        async let response = get(running.port, "/x")
        var iterator = events.makeAsyncIterator()
        #expect(await iterator.next() == "started")
        clock.advance(by: 2)
        #expect(try await response.status == 503)
        #expect(await iterator.next() == "cancelled")
        try await running.stop()
    }

    /// On a clock that never moves, the grace period never ends: `run()` returns because the last request's
    /// completion ends the drain, not because time passed.
    @Test func gracefulShutdownFinishesInFlightRequests() async throws {
        let (started, startedSignal) = AsyncStream.makeStream(of: Void.self)
        let gate = Gate()
        let running = try startServer(clock: ManualClock(now: 0)) { request in
            startedSignal.yield()
            await gate.wait()
            return .json(body: Data(#"{"finished":true}"#.utf8))
        }
        defer { gate.open() }
        let port = running.port
        async let inFlight = get(port, "/slow")
        var iterator = started.makeAsyncIterator()
        _ = await iterator.next()

        running.task.cancel()  // shutdown begins while the handler is still working
        // New connections are refused once the daemon is quiesced.
        try await eventually("new connections refused once shutdown began") {
            (try? RawClient(port: port, receiveTimeout: 2)) == nil
        }
        #expect(running.server.activeRequests == 1)

        gate.open()
        let response = try await inFlight
        #expect(response.status == 200)
        #expect(response.text == #"{"finished":true}"#)
        #expect(response.headers["connection"]?.lowercased() == "close")
        let task = running.task
        let drained = await withDeadline(seconds: 30) { (try? await task.value) != nil }
        #expect(drained == true, "run() did not return once the last request finished")
    }

    @Test func graceEndsWith503ForWhatStillRuns() async throws {
        let clock = ManualClock(now: 0)
        let (started, startedSignal) = AsyncStream.makeStream(of: Void.self)
        let gate = Gate()
        let running = try startServer(
            .test {
                $0.shutdownGracePeriod = 3
                $0.requestTimeout = 100
            }, clock: clock
        ) { _ in
            startedSignal.yield()
            await gate.wait()
            return HTTPResponse(status: 200)
        }
        defer { gate.open() }
        async let inFlight = get(running.port, "/stuck")
        var iterator = started.makeAsyncIterator()
        _ = await iterator.next()
        running.task.cancel()
        try await eventually("new connections refused once shutdown began") {
            (try? RawClient(port: running.port, receiveTimeout: 2)) == nil
        }
        clock.advance(by: 4)
        let response = try await inFlight
        #expect(response.status == 503)
        #expect(response.errorCode == "shutting_down")
        try await running.task.value
    }

    @Test func idleKeepAliveConnectionsDoNotHoldShutdown() async throws {
        let running = try startServer(.test { $0.idleTimeoutSeconds = 60 }, handler: echoRouter().handler)
        let port = running.port
        let idle = try await offPool { () -> RawClient in
            let client = try RawClient(port: port)
            try client.send("GET /json HTTP/1.1\r\nHost: t\r\n\r\n")
            _ = try client.readResponse()
            return client  // open, idle, keep-alive
        }
        try await running.stop()
        #expect(try await offPool { try idle.isClosedByServer() })
    }

    @Test func clientLeavingDuringTheHandlerIsCleanedUp() async throws {
        let (started, startedSignal) = AsyncStream.makeStream(of: Void.self)
        let gate = Gate()
        let running = try startServer { _ in
            startedSignal.yield()
            await gate.wait()
            return .json(body: Data(#"{"late":true}"#.utf8))
        }
        defer { gate.open() }
        let port = running.port
        var client: RawClient? = try await offPool {
            let client = try RawClient(port: port)
            try client.send("GET /x HTTP/1.1\r\nHost: t\r\n\r\n")
            return client
        }
        var iterator = started.makeAsyncIterator()
        _ = await iterator.next()
        #expect(client != nil)
        client = nil  // the client goes away while its handler still works
        gate.open()
        try await eventually("no request active") { running.server.activeRequests == 0 }
        try await eventually("every request context released") { running.server.liveContexts.value.load(ordering: .relaxed) == 0 }
        try await running.stop()
    }

    @Test func runsOnlyOnce() async throws {
        let running = try startServer(handler: echoRouter().handler)
        #expect(try await get(running.port, "/json").status == 200)
        try await running.stop()
        await #expect(throws: HTTPServerError.self) { try await running.server.run() }
    }
}
