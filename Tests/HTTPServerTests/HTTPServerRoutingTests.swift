import Foundation
import HTTPServer
import Runtime
import Testing

/// Requests over real sockets through libmicrohttpd, the bridge and the router.
@Suite(.timeLimit(.minutes(2))) struct HTTPServerRoutingTests {
    @Test func routesPathParametersQueryHeadersAndBody() async throws {
        try await withServer(handler: echoRouter().handler) { running in
            let body = #"{"type":"nearby"}"#
            let response = try await exchange(
                running.port,
                "POST /v1/visits/v%2F1%20%C3%A9/events?limit=5&q=a%20b+c&flag&empty= HTTP/1.1\r\nHost: t\r\n"
                    + "x-TEST: hello\r\nContent-Type: application/json\r\nContent-Length: \(body.utf8.count)\r\n"
                    + "Connection: close\r\n\r\n\(body)")
            #expect(response.status == 200)
            #expect(response.headers["Content-Type"] == "application/json")
            let echo = try decodeEcho(response)
            #expect(echo.method == "POST")
            #expect(echo.rawPath == "/v1/visits/v%2F1%20%C3%A9/events")
            #expect(echo.segments == ["v1", "visits", "v/1 é", "events"])
            #expect(echo.parameters == ["id": "v/1 é"])
            #expect(echo.query == [["limit", "5"], ["q", "a b c"], ["flag", "<nil>"], ["empty", ""]])
            #expect(echo.testHeader == "hello")
            #expect(echo.body == body)
            #expect(echo.remoteAddress?.hasPrefix("127.0.0.1:") == true)
            #expect(response.headers["X-Request-Id"] == echo.requestID)
            #expect(echo.requestID.count == 16)
        }
    }

    @Test func wellFormedClientRequestIDIsKeptAndBadOneReplaced() async throws {
        try await withServer(handler: echoRouter().handler) { running in
            let kept = try await get(running.port, "/v1/visits/a", headers: "X-Request-Id: proxy-123.abc\r\n")
            #expect(kept.headers["x-request-id"] == "proxy-123.abc")
            let replaced = try await get(running.port, "/v1/visits/a", headers: "X-Request-Id: bad id!\r\n")
            #expect(replaced.headers["x-request-id"] != "bad id!")
            #expect(replaced.headers["x-request-id"]?.count == 16)
        }
    }

    @Test func notFoundAndMethodNotAllowedAreJSON() async throws {
        try await withServer(handler: echoRouter().handler) { running in
            let missing = try await get(running.port, "/v2/nothing")
            #expect(missing.status == 404)
            #expect(missing.errorCode == "not_found")
            #expect(missing.headers["x-request-id"] != nil)
            let wrong = try await exchange(
                running.port, "DELETE /v1/visits/v-1 HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")
            #expect(wrong.status == 405)
            #expect(wrong.errorCode == "method_not_allowed")
            #expect(wrong.headers["Allow"] == "GET, HEAD")
            let head = try await exchange(
                running.port, "HEAD /json HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n", head: true)
            #expect(head.status == 200)
            #expect(head.body.isEmpty)
        }
    }

    @Test func brokenPercentEncodingIs400JSON() async throws {
        try await withServer(handler: echoRouter().handler) { running in
            for target in ["/v1/visits/%zz", "/v1/visits/%ff%fe", "/v1/visits/a?x=%E2%28", "/v1/visits/%"] {
                let response = try await get(running.port, target)
                #expect(response.status == 400, "\(target)")
                #expect(response.errorCode == "malformed_request", "\(target)")
            }
            #expect(try await get(running.port, "/v1/visits/ok").status == 200)
        }
    }

    @Test func keepAliveServesManyRequestsOnOneConnection() async throws {
        try await withServer(handler: echoRouter().handler) { running in
            let port = running.port
            let statuses = try await offPool { () -> [Int] in
                let client = try RawClient(port: port)
                var statuses: [Int] = []
                for i in 0..<50 {
                    try client.send("GET /v1/visits/k\(i) HTTP/1.1\r\nHost: t\r\n\r\n")
                    let response = try client.readResponse()
                    guard response.text.contains("k\(i)") else { throw RawClient.Failure(description: "wrong body") }
                    statuses.append(response.status)
                }
                // Pipelined: three requests in one write.
                try client.send(String(repeating: "GET /json HTTP/1.1\r\nHost: t\r\n\r\n", count: 3))
                for _ in 0..<3 { statuses.append(try client.readResponse().status) }
                return statuses
            }
            #expect(statuses == Array(repeating: 200, count: 53))
        }
    }

    @Test func manyConcurrentKeepAliveClients() async throws {
        try await withServer(handler: echoRouter().handler) { running in
            let port = running.port
            let counts = try await withThrowingTaskGroup(of: Int.self) { group in
                for c in 0..<32 {
                    group.addTask {
                        try await offPool {
                            let client = try RawClient(port: port)
                            var ok = 0
                            for i in 0..<40 {
                                try client.send("GET /v1/visits/c\(c)-\(i) HTTP/1.1\r\nHost: t\r\n\r\n")
                                let response = try client.readResponse()
                                if response.status == 200, response.text.contains("\"c\(c)-\(i)\"") { ok += 1 }
                            }
                            return ok
                        }
                    }
                }
                var all: [Int] = []
                for try await count in group { all.append(count) }
                return all
            }
            #expect(counts == Array(repeating: 40, count: 32))
        }
    }

    @Test func metricsAndRouteTemplateAreRecorded() async throws {
        let metrics = Metrics()
        try await withServer(metrics: metrics, handler: echoRouter().handler) { running in
            _ = try await get(running.port, "/v1/visits/a")
            _ = try await get(running.port, "/v1/visits/b")
            _ = try await get(running.port, "/nope")
            try await running.stop()
            #expect(running.server.requestCount(route: "/v1/visits/{id}", method: "GET", status: "200") == 2)
            #expect(running.server.requestCount(route: "unmatched", method: "GET", status: "404") == 1)
            let text = await metrics.render()
            #expect(text.contains("livevisits_http_request_seconds_bucket{route=\"/v1/visits/{id}\",le=\"+Inf\"} 2\n"))
            #expect(text.contains("livevisits_http_request_seconds_count{route=\"unmatched\"} 1\n"))
            #expect(text.contains("livevisits_http_requests_total{method=\"GET\",route=\"/v1/visits/{id}\",status=\"200\"} 2\n"))
            #expect(text.contains("# TYPE livevisits_http_request_seconds histogram\n"))
        }
    }
}
