import Foundation
import Runtime
import Synchronization
import TestSupportCore
import Testing

@testable import HTTPServer

#if canImport(Glibc)
    import Glibc
#endif

/// Clients that trickle, crowd or frame their requests ambiguously: the server stays available to the others.
@Suite(.timeLimit(.minutes(2))) struct HTTPServerSlowClientsTests {
    /// The deadline runs from the connection's opening and no byte restarts it (the idle timeout would be).
    @Test func tricklingRequestIsDroppedAtTheDeadline() async throws {
        let clock = ManualClock(now: 1_000)
        try await withServer(
            .test {
                $0.requestReceiveTimeout = 10
                $0.idleTimeoutSeconds = 120
            }, clock: clock, handler: echoRouter().handler
        ) { running in
            let port = running.port
            let slow = try await offPool { () -> RawClient in
                let client = try RawClient(port: port)
                try client.send("GET /v1/visits/slow HTTP/1.1\r\nHost: t\r\n")
                return client
            }
            try await eventually("the connection is open") { running.server.openConnections == 1 }
            clock.advance(by: 6)
            try await offPool { try slow.send("X-Pad: a") }
            clock.advance(by: 4)  // 10 s since the opening, 4 since the last byte
            #expect(try await offPool { try slow.isClosedByServer() })
            try await eventually("the connection is closed") { running.server.openConnections == 0 }
            #expect(try await get(port, "/json").status == 200)
        }
    }

    /// Just inside the deadline a request is served; on a kept-alive connection the next request's deadline
    /// runs from the answer.
    @Test func aRequestInsideTheDeadlineIsServedAndTheNextOneGetsItsOwn() async throws {
        let clock = ManualClock(now: 1_000)
        try await withServer(
            .test {
                $0.requestReceiveTimeout = 10
                $0.idleTimeoutSeconds = 120
            }, clock: clock, handler: echoRouter().handler
        ) { running in
            let port = running.port
            let client = try await offPool { () -> RawClient in
                let client = try RawClient(port: port)
                try client.send("GET /v1/visits/a HTTP/1.1\r\nHost: t\r\n")
                return client
            }
            try await eventually("the connection is open") { running.server.openConnections == 1 }
            clock.advance(by: 9.9)
            let first = try await offPool { () -> RawClient.Response in
                try client.send("\r\n")
                return try client.readResponse()
            }
            #expect(first.status == 200)
            try await eventually("the answer is sent") { running.server.activeRequests == 0 }
            clock.advance(by: 9.9)  // 19.8 s since the opening, 9.9 since the answer
            let second = try await offPool { () -> RawClient.Response in
                try client.send("GET /v1/visits/b HTTP/1.1\r\nHost: t\r\n\r\n")
                return try client.readResponse()
            }
            #expect(second.status == 200)
            try await eventually("the answer is sent") { running.server.activeRequests == 0 }
            clock.advance(by: 10)  // the kept-alive connection's next request never came
            #expect(try await offPool { try client.isClosedByServer() })
        }
    }

    /// With the connection limit taken by 1,000 trickling sockets (from eight addresses, under the per-address
    /// limit), a well-behaved client's `/healthz` and a visit GET are still answered: the tricklers are
    /// dropped at the deadline and the waiting client gets their place.
    @Test func aThousandTricklersDoNotKeepAGoodClientOut() async throws {
        let tricklers = 1000
        try raiseOpenFilesLimit(atLeast: 3 * tricklers + 512)
        let clock = ManualClock(now: 1_000)
        var router = echoRouter()
        router.add(.get, "/healthz") { _, _ in .json(body: Data(#"{"ok":true}"#.utf8)) }
        try await withServer(
            .test {
                $0.connectionLimit = tricklers
                $0.requestReceiveTimeout = 10
                $0.idleTimeoutSeconds = 120
            }, clock: clock, handler: router.handler
        ) { running in
            let port = running.port
            let load = try await offPool {
                try TricklingLoad(
                    port: port, count: tricklers, sources: (2...9).map { "127.0.0.\($0)" }, everyMilliseconds: 1000)
            }
            defer { load.stop() }
            try await eventually("every trickler connected") { running.server.openConnections == tricklers }
            #expect(running.server.configuration.perAddressConnectionLimit == 128)

            // Both wait in the listen backlog behind the full server until the tricklers' deadline passes.
            let paths = ["/healthz", "/v1/visits/v-1"]
            let waiting = try await offPool {
                try paths.map { path in
                    let client = try RawClient(port: port, receiveTimeout: 30)
                    try client.send("GET \(path) HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")
                    return client
                }
            }
            try await eventually("the tricklers have trickled") { load.bytesSent() >= tricklers }
            clock.advance(by: 10)
            for (path, client) in zip(paths, waiting) {
                let answer = try await offPool { try client.readResponse() }
                #expect(answer.status == 200, "\(path)")
            }
        }
    }

    /// The 129th connection from one address is closed at once; another address is still served.
    @Test func theDefaultPerAddressLimitRefusesThe129thConnection() async throws {
        try raiseOpenFilesLimit(atLeast: 1024)
        try await withServer(.test { $0.idleTimeoutSeconds = 120 }, clock: ManualClock(now: 0), handler: echoRouter().handler) {
            running in
            let port = running.port
            let held = try await offPool { try (0..<128).map { _ in try RawClient(port: port, source: "127.0.0.3") } }
            try await eventually("128 connections open") { running.server.openConnections == 128 }
            let refused = try await offPool { () -> Bool in
                let client = try RawClient(port: port, source: "127.0.0.3")
                try? client.send("GET /json HTTP/1.1\r\nHost: t\r\n\r\n")
                return try client.isClosedByServer()
            }
            #expect(refused)
            #expect(held.count == 128)
            #expect(try await get(port, "/json").status == 200)  // from 127.0.0.1
        }
    }

    @Test func aSmallPerAddressLimitIsApplied() async throws {
        try await withServer(
            .test { $0.perAddressConnectionLimit = 2 }, clock: ManualClock(now: 0), handler: echoRouter().handler
        ) { running in
            let port = running.port
            let (answers, refused) = try await offPool { () -> ([Int], Bool) in
                let held = try (0..<2).map { _ in try RawClient(port: port) }
                var answers: [Int] = []
                for client in held {
                    try client.send("GET /json HTTP/1.1\r\nHost: t\r\n\r\n")
                    answers.append(try client.readResponse().status)
                }
                let third = try RawClient(port: port)
                try? third.send("GET /json HTTP/1.1\r\nHost: t\r\n\r\n")
                return (answers, try third.isClosedByServer())
            }
            #expect(answers == [200, 200])
            #expect(refused)
        }
    }

    /// Framing a proxy and this server could read two ways is refused, and the connection closed.
    @Test(arguments: [
        "POST /v1/visits/a/events HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
        "POST /v1/visits/a/events HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
        "POST /v1/visits/a/events HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello!",
        "GET /v1/visits/a HTTP/1.1\r\nHost: t\r\nContent-Length: 0\r\nContent-Length: 1\r\n\r\nx",
    ])
    func ambiguousFramingIs400AndCloses(_ request: String) async throws {
        try await withServer(handler: echoRouter().handler) { running in
            let port = running.port
            let (response, closed) = try await offPool { () -> (RawClient.Response, Bool) in
                let client = try RawClient(port: port)
                try client.send(request + "GET /json HTTP/1.1\r\nHost: t\r\n\r\n")
                let response = try client.readResponse()
                return (response, try client.isClosedByServer())
            }
            #expect(response.status == 400)
            #expect(response.errorCode == "malformed_request")
            #expect(response.headers["connection"]?.lowercased() == "close")
            #expect(closed)
        }
    }

    @Test func twoEqualContentLengthsAreOneLength() async throws {
        try await withServer(handler: echoRouter().handler) { running in
            let response = try await exchange(
                running.port,
                "POST /v1/visits/a/events HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello"
            )
            #expect(response.status == 200)
            #expect(try decodeEcho(response).body == "hello")
        }
    }

    @Test func everyAnswerSaysNosniff() async throws {
        var router = echoRouter()
        router.add(.get, "/sniff") { _, _ in
            HTTPResponse(status: 200, headers: ["X-Content-Type-Options": "sniff-away"], body: Data("x".utf8))
        }
        try await withServer(handler: router.handler) { running in
            for path in ["/json", "/nowhere", "/sniff"] {
                let response = try await get(running.port, path)
                #expect(response.headers.values(for: "X-Content-Type-Options") == ["nosniff"], "\(path)")
            }
            let tooLarge = try await exchange(
                running.port, "POST /v1/visits/a/events HTTP/1.1\r\nHost: t\r\nContent-Length: 10000000\r\n\r\n")
            #expect(tooLarge.status == 413)
            #expect(tooLarge.headers["x-content-type-options"] == "nosniff")
        }
    }
}

/// Sockets that each send one byte of a never-ending header every interval, from a thread of their own,
/// until stopped. A socket the server closes stays closed.
final class TricklingLoad: Sendable {
    private let clients: [RawClient]
    private let stopped = DispatchSemaphore(value: 0)
    private let finished = DispatchSemaphore(value: 0)
    private let sent = Atomic<Int>(0)

    /// Opens `count` connections spread over `sources`, sends each a request line, then trickles.
    init(port: UInt16, count: Int, sources: [String], everyMilliseconds interval: Int) throws {
        clients = try (0..<count).map { index in
            let client = try RawClient(port: port, source: sources[index % sources.count])
            try client.send("GET /v1/visits/trickle HTTP/1.1\r\nHost: t\r\nX-Pad: ")
            return client
        }
        Thread.detachNewThread { [self] in
            // The wait paces the load and returns early when stopped.
            while stopped.wait(timeout: .now() + .milliseconds(interval)) == .timedOut {
                for client in clients {
                    if (try? client.send("a")) != nil { sent.add(1, ordering: .relaxed) }
                }
            }
            finished.signal()
        }
    }

    /// Bytes sent after the request lines.
    func bytesSent() -> Int { sent.load(ordering: .relaxed) }

    /// Stops trickling and waits for the thread to end.
    func stop() {
        stopped.signal()
        finished.wait()
    }
}

/// Raises this process's open-files soft limit to `needed` when it is lower; fails (never skips) when the
/// hard limit does not allow it.
func raiseOpenFilesLimit(atLeast needed: Int) throws {
    var limit = rlimit()
    guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { throw RawClient.Failure(description: "getrlimit") }
    if limit.rlim_cur == rlim_t.max || limit.rlim_cur >= rlim_t(needed) { return }
    guard limit.rlim_max == rlim_t.max || limit.rlim_max >= rlim_t(needed) else {
        throw RawClient.Failure(description: "the open-files hard limit \(limit.rlim_max) is below the \(needed) this test needs")
    }
    limit.rlim_cur = rlim_t(needed)
    guard setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { throw RawClient.Failure(description: "setrlimit") }
}
