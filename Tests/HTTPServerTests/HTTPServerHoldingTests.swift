import Foundation
import Runtime
import Synchronization
import TestSupportCore
import Testing

@testable import HTTPServer

/// Connections that hold requests (`holdingPathPrefixes`) are served by threads of their own, under the same
/// connection limits as every other connection.
@Suite(.timeLimit(.minutes(2))) struct HTTPServerHoldingTests {
    /// A router whose `/held/{id}` answers once `gate` opens, beside the echo routes.
    private static func router(_ gate: Gate) -> Router {
        var router = echoRouter()
        router.add(.get, "/held/{id}") { _, _ in
            await gate.wait()
            return .json(body: Data(#"{"held":true}"#.utf8))
        }
        return router
    }

    /// A connection whose request waits at `/held/a`, once the server has handed it to the holding threads.
    private static func holdOne(_ running: RunningServer) async throws -> RawClient {
        let port = running.port
        let held = try await offPool { () -> RawClient in
            let client = try RawClient(port: port)
            try client.send("GET /held/a HTTP/1.1\r\nHost: t\r\n\r\n")
            return client
        }
        try await eventually("the held request's connection went apart", within: 10) {
            running.server.holdingConnections == 1
        }
        return held
    }

    private static let holding = HTTPServerConfiguration.test {
        $0.holdingPathPrefixes = ["/held/"]
        $0.idleTimeoutSeconds = 120
    }

    /// A connection whose first request is under a holding prefix goes to the holding threads, whatever it asks
    /// next; any other connection (another path, another method, a silent client) to the ordinary ones; and an
    /// ordinary request is answered while a held one waits.
    @Test func aHeldRequestsConnectionIsServedApart() async throws {
        let gate = Gate()
        try await withServer(Self.holding, handler: Self.router(gate).handler) { running in
            let port = running.port
            let held = try await Self.holdOne(running)
            #expect(try await get(port, "/json").status == 200)
            #expect(try await get(port, "/v1/visits/held").status == 200)
            #expect(try await exchange(port, "POST /held/b HTTP/1.1\r\nHost: t\r\nContent-Length: 0\r\n\r\n").status == 405)
            // Silent for longer than the loop waits for first bytes: ordinary threads, which still serve it.
            let silent = try await offPool { () -> RawClient in
                let client = try RawClient(port: port)
                #expect(try client.staysSilent(milliseconds: Int(AcceptLoop.sortingSeconds * 1000) + 200))
                try client.send("GET /held/c HTTP/1.1\r\nHost: t\r\n\r\n")
                return client
            }
            #expect(running.server.holdingConnections == 1)
            gate.open()
            let answers = try await offPool { () -> [Int] in
                let first = try held.readResponse()
                try held.send("GET /json HTTP/1.1\r\nHost: t\r\n\r\n")
                return [first.status, try held.readResponse().status, try silent.readResponse().status]
            }
            #expect(answers == [200, 200, 200])
            #expect(running.server.holdingConnections == 1)
        }
    }

    /// The per-address limit counts the connections of both kinds together, and a closed one frees its place.
    @Test func thePerAddressLimitCountsBothKinds() async throws {
        let gate = Gate()
        var configuration = Self.holding
        configuration.perAddressConnectionLimit = 2
        try await withServer(configuration, handler: Self.router(gate).handler) { running in
            let port = running.port
            let held = try await Self.holdOne(running)
            let (ordinary, refused) = try await offPool { () -> (RawClient, Bool) in
                let ordinary = try RawClient(port: port)
                try ordinary.send("GET /json HTTP/1.1\r\nHost: t\r\n\r\n")
                #expect(try ordinary.readResponse().status == 200)
                let third = try RawClient(port: port)
                try? third.send("GET /held/b HTTP/1.1\r\nHost: t\r\n\r\n")
                return (ordinary, try third.isClosedByServer())
            }
            #expect(refused)
            #expect(running.server.holdingConnections == 1)
            gate.open()
            try await offPool {
                #expect(try held.readResponse().status == 200)
                try held.send("GET /json HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")
                #expect(try held.readResponse().status == 200)
                #expect(try held.isClosedByServer())
            }
            try await eventually("the held connection's place is free") { running.server.openConnections == 1 }
            #expect(try await get(port, "/json").status == 200)
            _ = ordinary
        }
    }

    @Test func aHoldingPrefixMustStartAPath() {
        var configuration = HTTPServerConfiguration.test()
        configuration.holdingPathPrefixes = ["track/"]
        #expect(throws: HTTPServerError.self) { try HTTPServer(configuration: configuration) { _ in HTTPResponse(status: 200) } }
    }
}
