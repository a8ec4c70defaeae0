import Foundation
import HTTPServer
import TestSupportCore
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A polite, ordinary client (URLSession, libcurl underneath), and listening on IPv6.
@Suite(.timeLimit(.minutes(2))) struct HTTPServerClientTests {
    private func fetch(_ url: URL, method: String = "GET", body: Data? = nil) async throws -> (Int, Data, [String: String]) {
        var request = URLRequest(url: url)
        request.httpMethod = method
        request.httpBody = body
        if body != nil { request.setValue("application/json", forHTTPHeaderField: "Content-Type") }
        let (data, response) = try await URLSession.shared.data(for: request)
        let http = try #require(response as? HTTPURLResponse)
        var headers: [String: String] = [:]
        for (key, value) in http.allHeaderFields {
            if let key = key as? String, let value = value as? String { headers[key.lowercased()] = value }
        }
        return (http.statusCode, data, headers)
    }

    @Test func urlSessionOverIPv4() async throws {
        try await withServer(handler: echoRouter().handler) { running in
            let base = "http://127.0.0.1:\(running.port)"
            let (status, data, headers) = try await fetch(
                URL(string: "\(base)/v1/visits/v-9/events?x=1")!, method: "POST", body: Data(#"{"a":1}"#.utf8))
            #expect(status == 200)
            #expect(headers["x-request-id"]?.count == 16)
            let echo = try JSONDecoder().decode(Echo.self, from: data)
            #expect(echo.parameters["id"] == "v-9")
            #expect(echo.body == #"{"a":1}"#)
            let (missing, body, _) = try await fetch(URL(string: "\(base)/nope")!)
            #expect(missing == 404)
            #expect(String(decoding: body, as: UTF8.self).contains("not_found"))
        }
    }

    @Test func listensOnIPv6() async throws {
        // A machine without an IPv6 loopback fails here, naming the init error: the test does not pass unrun.
        let address = try ListenAddress(parsing: "[::1]:0")
        let server = try HTTPServer(configuration: .test { $0.listenAddress = address }) { _ in
            .json(body: Data(#"{"v6":true}"#.utf8))
        }
        #expect(server.address.description.hasPrefix("[::1]:"))
        try await withRunning({ try await server.run() }) { task in
            let port = server.address.port
            let response = try await offPool {
                let client = try RawClient(port: port, host: "::1")
                try client.send("GET / HTTP/1.1\r\nHost: [::1]\r\nConnection: close\r\n\r\n")
                return try client.readResponse()
            }
            #expect(response.status == 200)
            #expect(response.text == #"{"v6":true}"#)
            task.cancel()
            try await task.value
        }
    }

    /// A body past `lentBodyBytes` is sent from the response's own bytes: whole, byte for byte, to clients
    /// asking at once, and again to the next asks (the same `Data` answers them all).
    @Test func largeBodiesGoWholeToClientsAskingAtOnce() async throws {
        let body = Data((0..<(HTTPServer.lentBodyBytes * 40 + 7)).map { UInt8(truncatingIfNeeded: $0 &* 31) })
        try await withServer(handler: { _ in .json(body: body) }) { running in
            let url = URL(string: "http://127.0.0.1:\(running.port)/day")!
            for _ in 0..<2 {
                let answers = try await withThrowingTaskGroup(of: Data.self) { group in
                    for _ in 0..<8 { group.addTask { try await fetch(url).1 } }
                    return try await group.reduce(into: []) { $0.append($1) }
                }
                #expect(answers.count == 8 && answers.allSatisfy { $0 == body })
            }
        }
    }
}
