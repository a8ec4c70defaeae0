import Foundation
import Runtime
import TestSupportCore
import Testing

@testable import HTTPServer

/// Bodies, headers, connections and clients that misbehave.
@Suite(.timeLimit(.minutes(2))) struct HTTPServerLimitsTests {
    @Test func declaredOversizedBodyIsRefusedBeforeItIsSent() async throws {
        try await withServer(.test { $0.maxBodyBytes = 1024 }, handler: echoRouter().handler) { running in
            let port = running.port
            // Only the headers go out: the 413 must come without the server waiting for the body.
            let response = try await offPool {
                let client = try RawClient(port: port)
                try client.send("POST /v1/visits/a/events HTTP/1.1\r\nHost: t\r\nContent-Length: 10000000\r\n\r\n0123456789")
                return try client.readResponse()
            }
            #expect(response.status == 413)
            #expect(response.errorCode == "payload_too_large")
            #expect(response.headers["x-request-id"] != nil)
            // Exactly at the limit is fine.
            let exact = String(repeating: "x", count: 1024)
            let ok = try await exchange(
                port, "POST /v1/visits/a/events HTTP/1.1\r\nHost: t\r\nContent-Length: 1024\r\nConnection: close\r\n\r\n\(exact)")
            #expect(ok.status == 200)
            #expect(try decodeEcho(ok).bodyBytes == 1024)
        }
    }

    @Test func expectContinueIsAnsweredBeforeTheBody() async throws {
        try await withServer(.test { $0.maxBodyBytes = 100 }, handler: echoRouter().handler) { running in
            let port = running.port
            let (interim, final, refused) = try await offPool { () -> (Int, RawClient.Response, RawClient.Response) in
                let client = try RawClient(port: port)
                try client.send(
                    "POST /v1/visits/a/events HTTP/1.1\r\nHost: t\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\n")
                let interim = try client.readResponse().status
                try client.send("12345")
                let final = try client.readResponse()
                // Too large: refused at once, no 100 Continue, so the client never sends the body.
                let other = try RawClient(port: port)
                try other.send(
                    "POST /v1/visits/a/events HTTP/1.1\r\nHost: t\r\nExpect: 100-continue\r\nContent-Length: 500\r\n\r\n")
                return (interim, final, try other.readResponse())
            }
            #expect(interim == 100)
            #expect(final.status == 200)
            #expect(try decodeEcho(final).body == "12345")
            #expect(refused.status == 413)
        }
    }

    @Test func defaultLimitIs64KiB() async throws {
        try await withServer(handler: echoRouter().handler) { running in
            let fits = String(repeating: "a", count: 65536)
            let ok = try await exchange(
                running.port,
                "POST /v1/visits/a/events HTTP/1.1\r\nHost: t\r\nContent-Length: 65536\r\nConnection: close\r\n\r\n\(fits)")
            #expect(ok.status == 200)
            #expect(try decodeEcho(ok).bodyBytes == 65536)
            let over = try await exchange(
                running.port, "POST /v1/visits/a/events HTTP/1.1\r\nHost: t\r\nContent-Length: 65537\r\n\r\n")
            #expect(over.status == 413)
        }
    }

    @Test func chunkedUploadOverTheLimitIs413() async throws {
        try await withServer(.test { $0.maxBodyBytes = 1000 }, handler: echoRouter().handler) { running in
            let chunk = String(repeating: "z", count: 400)
            let chunked = "POST /v1/visits/a/events HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n"
            let over = try await exchange(
                running.port, chunked + String(repeating: "190\r\n\(chunk)\r\n", count: 5) + "0\r\n\r\n")
            #expect(over.status == 413)
            #expect(over.errorCode == "payload_too_large")
            #expect(over.headers["connection"]?.lowercased() == "close")
            // Under the limit, chunks are joined.
            let under = try await exchange(running.port, chunked + "190\r\n\(chunk)\r\n190\r\n\(chunk)\r\n0\r\n\r\n")
            #expect(under.status == 200)
            #expect(try decodeEcho(under).bodyBytes == 800)
        }
    }

    @Test func endlessChunkedUploadIsCutOff() async throws {
        try await withServer(.test { $0.maxBodyBytes = 1000 }, handler: echoRouter().handler) { running in
            let port = running.port
            // Keeps sending chunks: the server must stop reading at some bound and close the connection.
            let cut = try await offPool { () -> Bool in
                let client = try RawClient(port: port)
                try client.send("POST /v1/visits/a/events HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n")
                let piece = Array("4000\r\n\(String(repeating: "y", count: 0x4000))\r\n".utf8)
                for _ in 0..<10_000 {  // 160 MiB at most
                    do { try client.send(piece) } catch { return true }
                }
                return false
            }
            #expect(cut)
            #expect(try await get(port, "/json").status == 200)
        }
    }

    @Test func lyingContentLengthsDoNotConfuseTheServer() async throws {
        try await withServer(.test { $0.idleTimeoutSeconds = 2 }, handler: echoRouter().handler) { running in
            let port = running.port
            // Says 5, sends 40: the handler sees 5 bytes; the rest, a complete line, is read as the next request,
            // whose request line is malformed: 400.
            let (first, second) = try await offPool { () -> (RawClient.Response, Int?) in
                let client = try RawClient(port: port)
                try client.send(
                    "POST /v1/visits/a/events HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\n\r\nhello, this is much more than five bytes\r\n\r\n"
                )
                let first = try client.readResponse()
                let second = try? client.readResponse()
                return (first, second?.status)
            }
            #expect(first.status == 200)
            #expect(try decodeEcho(first).body == "hello")
            #expect(second == 400)
            // Says 50, sends 10 and stops: the idle timeout closes the connection, no handler runs.
            let closed = try await offPool {
                let client = try RawClient(port: port)
                try client.send("POST /v1/visits/a/events HTTP/1.1\r\nHost: t\r\nContent-Length: 50\r\n\r\n0123456789")
                return try client.isClosedByServer()
            }
            #expect(closed)
            #expect(try await get(port, "/json").status == 200)
        }
    }

    @Test func oversizedHeadersAreRefused() async throws {
        try await withServer(.test { $0.maxHeaderBytes = 8192 }, handler: echoRouter().handler) { running in
            let big = String(repeating: "h", count: 16_000)
            let response = try await exchange(
                running.port, "GET /json HTTP/1.1\r\nHost: t\r\nX-Big: \(big)\r\nConnection: close\r\n\r\n")
            #expect(response.status == 431)
            let many = (0..<400).map { "X-H\($0): \(String(repeating: "v", count: 40))\r\n" }.joined()
            let manyResponse = try await exchange(
                running.port, "GET /json HTTP/1.1\r\nHost: t\r\n\(many)Connection: close\r\n\r\n")
            #expect(manyResponse.status == 431)
            #expect(try await get(running.port, "/json").status == 200)
        }
    }

    @Test func malformedRequestsAre400NotACrash() async throws {
        try await withServer(handler: echoRouter().handler) { running in
            let port = running.port
            // libmicrohttpd answers 400 to a request line it can split into method, target and version, and
            // closes the connection without an answer when the line has no space to split at; a declared body
            // too large for a number is over the body limit (413).
            let garbage: [(request: String, status: Int?)] = [
                ("GARBAGE\r\n\r\n", nil),
                ("GET\r\n\r\n", nil),
                ("GET / HTTP/1.1 extra\r\nHost: t\r\n\r\n", 400),
                ("GET / HTTP/1.1\r\nno colon here\r\n\r\n", 400),
                ("GET / HTTP/1.1\r\nHost: t\r\nContent-Length: abc\r\n\r\n", 400),
                ("GET / HTTP/1.1\r\nHost: t\r\nContent-Length: -5\r\n\r\n", 400),
                ("GET / HTTP/1.1\r\nHost: t\r\nContent-Length: 99999999999999999999999\r\n\r\n", 413),
                ("POST / HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\nZZZ\r\nabc\r\n0\r\n\r\n", 400),
                ("\u{1}\u{2}\u{3}\u{FF}\r\n\r\n", nil),
            ]
            for (request, expected) in garbage {
                let status = try await offPool { () -> Int? in
                    let client = try RawClient(port: port)
                    try client.send(request)
                    return try? client.readResponse().status
                }
                #expect(status == expected, "\(request.debugDescription) → \(status.map(String.init) ?? "closed unanswered")")
            }
            let binary = try await offPool { () -> Int? in
                let client = try RawClient(port: port)
                try client.send((0..<4096).map { UInt8(truncatingIfNeeded: $0 &* 7919) } + Array("\r\n\r\n".utf8))
                return try? client.readResponse().status
            }
            #expect(binary == 400)
            #expect(try await get(port, "/json").status == 200)
        }
    }

    @Test func slowClientDoesNotBlockOthersAndIdleOnesAreClosed() async throws {
        try await withServer(
            .test {
                $0.idleTimeoutSeconds = 1
                $0.threadCount = 1
            }, handler: echoRouter().handler
        ) { running in
            let port = running.port
            // A client that stopped in the middle of its headers, one that never sent anything,
            // and one in the middle of its body, all on the single polling thread.
            let stuck = try await offPool { () -> [RawClient] in
                let a = try RawClient(port: port)
                try a.send("GET /v1/visits/slow HTTP/1.1\r\nHost: t\r\nX-Part")
                let b = try RawClient(port: port)
                let c = try RawClient(port: port)
                try c.send("POST /v1/visits/a/events HTTP/1.1\r\nHost: t\r\nContent-Length: 100\r\n\r\nabc")
                return [a, b, c]
            }
            for i in 0..<20 {
                #expect(try await get(port, "/v1/visits/fast\(i)").status == 200)
            }
            // Each stalled connection is closed by the server once it has been silent too long.
            for client in stuck {
                #expect(try await offPool { try client.isClosedByServer() })
            }
            try await eventually("no request active") { running.server.activeRequests == 0 }
        }
    }

    @Test func tricklingUploadHitsTheRequestDeadline() async throws {
        let clock = ManualClock(now: 1_000)
        // The idle timeout is far away: only the whole-request deadline can close this connection in time
        // (the client's read gives up after 20 s and fails the test).
        try await withServer(
            .test {
                $0.requestReceiveTimeout = 5
                $0.idleTimeoutSeconds = 120
            }, clock: clock, handler: echoRouter().handler
        ) { running in
            let port = running.port
            let client = try await offPool { () -> RawClient in
                let client = try RawClient(port: port)
                try client.send("POST /v1/visits/a/events HTTP/1.1\r\nHost: t\r\nContent-Length: 100\r\n\r\nabc")
                return client
            }
            try await eventually("one request active") { running.server.activeRequests == 1 }  // headers are in
            clock.advance(by: 6)  // the client keeps sending, but too late
            let closed = try await offPool { () -> Bool in
                try? client.send("defgh")  // may meet the connection closed already
                return try client.isClosedByServer()
            }
            #expect(closed)
            try await eventually("no request active") { running.server.activeRequests == 0 }
        }
    }

    @Test func connectionLimitHoldsTheSurplusBackUntilASlotFrees() async throws {
        try await withServer(
            .test {
                $0.connectionLimit = 2
                $0.threadCount = 1
            }, handler: echoRouter().handler
        ) { running in
            let port = running.port
            let (silent, late) = try await offPool { () -> (Bool, Int) in
                var held: [RawClient] = []
                for _ in 0..<2 {
                    let client = try RawClient(port: port)
                    try client.send("GET /json HTTP/1.1\r\nHost: t\r\n\r\n")
                    _ = try client.readResponse()
                    held.append(client)
                }
                // At the limit libmicrohttpd stops accepting: the third waits in the backlog, unserved.
                let third = try RawClient(port: port)
                try third.send("GET /json HTTP/1.1\r\nHost: t\r\n\r\n")
                let silent = try third.staysSilent(milliseconds: 300)
                held.removeFirst()  // one slot frees up
                return (silent, try third.readResponse().status)
            }
            #expect(silent)
            #expect(late == 200)
        }
    }

    /// libmicrohttpd splits its limit over its threads and the socket number picks a connection's thread, so
    /// every thread's share must hold the whole limit: in 0.9.75 a thread that reaches its share while taking up
    /// a handed-over connection keeps a lock and never polls again (`aThousandTricklersDoNotKeepAGoodClientOut`
    /// hung about one run in fifteen when the shares were split).
    @Test(arguments: [1, 2, 4, 256]) func everyThreadsShareHoldsTheWholeLimit(threads: Int) {
        for limit in [1, 1024, 100_000] {
            let total = Int(AcceptLoop.daemonConnectionLimit(connectionLimit: limit, threads: threads))
            #expect(total / threads >= limit + AcceptLoop.cleanupSlack, "limit \(limit)")
        }
        // Saturates rather than wraps.
        #expect(AcceptLoop.daemonConnectionLimit(connectionLimit: Int(Int32.max), threads: threads) >= UInt32(Int32.max))
    }

    /// Connections up to the limit are all served, however they fall on the threads (in this process clients
    /// and server share one descriptor table, so the socket numbers, and the threads, are uneven).
    @Test func connectionsUpToTheLimitAreServedWhereverTheyLand() async throws {
        let count = 900
        try raiseOpenFilesLimit(atLeast: 2 * count + 512)
        try await withServer(
            .test {
                $0.connectionLimit = count
                $0.perAddressConnectionLimit = 0
                $0.threadCount = 4
            }, handler: echoRouter().handler
        ) { running in
            let port = running.port
            // Opened at once, before the server has taken any up.
            let clients = try await offPool { try (0..<count).map { _ in try RawClient(port: port, receiveTimeout: 20) } }
            try await eventually("every connection taken up") { running.server.openConnections == count }
            let statuses = try await offPool { () -> [Int] in
                for client in clients { try client.send("GET /json HTTP/1.1\r\nHost: t\r\n\r\n") }
                return try clients.map { try $0.readResponse().status }
            }
            #expect(statuses == Array(repeating: 200, count: count))
        }
    }

    @Test func abortedUploadsAreReleased() async throws {
        try await withServer(handler: echoRouter().handler) { running in
            let port = running.port
            var clients: [RawClient]? = try await offPool {
                try (0..<20).map { _ in
                    let client = try RawClient(port: port)
                    try client.send("POST /v1/visits/a/events HTTP/1.1\r\nHost: t\r\nContent-Length: 5000\r\n\r\npartial")
                    return client
                }
            }
            try await eventually("20 requests active") { running.server.activeRequests == 20 }
            #expect(clients?.count == 20)
            clients = nil  // every upload aborted mid-body
            try await eventually("no request active") { running.server.activeRequests == 0 }
            try await eventually("every request context released") {
                running.server.liveContexts.value.load(ordering: .relaxed) == 0
            }
            #expect(try await get(port, "/json").status == 200)
            try await running.stop()
            #expect(running.server.liveContexts.value.load(ordering: .relaxed) == 0)
        }
    }

    @Test func withoutKeepAliveEveryResponseCloses() async throws {
        try await withServer(.test { $0.keepAlive = false }, handler: echoRouter().handler) { running in
            let port = running.port
            let (response, closed) = try await offPool { () -> (RawClient.Response, Bool) in
                let client = try RawClient(port: port)
                try client.send("GET /json HTTP/1.1\r\nHost: t\r\n\r\n")
                return (try client.readResponse(), try client.isClosedByServer())
            }
            #expect(response.status == 200)
            #expect(response.headers["connection"]?.lowercased() == "close")
            #expect(closed)
        }
    }
}
