import Foundation
import HTTPAPI
import HTTPServer
import Outbox
import Postgres
import Runtime
import TestSupport
import Testing
import VisitDomain
import VisitProjections

#if canImport(Glibc)
    import Glibc
#endif

/// `/readyz` names what it checked (contract §12, issue 18's "`/readyz` says which"): a ready process
/// lists each check; a database that never answers is a 503 `database_unreachable` at readiness's own
/// deadline, not a request that hangs for as long as libpq waits.
@Suite(.timeLimit(.minutes(1))) struct ReadinessTests {
    @Test func aReadyProcessListsWhatItChecked() async throws {
        try await withAPIServer { api in
            let ready = try await api.call("GET", "/readyz", key: nil)
            #expect(ready.status == 200)
            #expect(ready.json?["status"] as? String == "ready")
            let checks = try #require(ready.json?["checks"] as? [String: Any])
            #expect(checks["database"] as? String == "primary")
            #expect(checks["migrations"] as? String == "current")
            #expect(checks["replication"] as? String == "none")
            #expect(checks["standbys"] as? Int == 0)
            // No revocation listener runs in this server: the process polls.
            #expect(checks["listen"] as? String == "polling")
        }
    }

    @Test func aDatabaseThatNeverAnswersIsA503AtTheDeadline() async throws {
        // A server that takes connections and never says a word: libpq waits for its greeting.
        let silent = try SilentListener()
        let url = "postgresql://livevisits@127.0.0.1:\(silent.port)/livevisits"
        let configuration = PostgresConfiguration(url: url, size: 2, acquireTimeoutSeconds: 60, connectTimeoutSeconds: 60)
        try await PostgresPool.withPool(configuration) { pool in
            // Closed before the pool: the connection the pool is still opening on it fails at once, so the
            // pool's close does not wait out the connect timeout.
            defer { silent.close() }
            let rules = try ProjectionRules.load(directory: TestDatabase.projectionsDirectory)
            let readModel = try VisitReadModel(projectionsDirectory: TestDatabase.projectionsDirectory, rules: rules)
            let environment = APIEnvironment(
                pool: pool, readModel: readModel, outbox: Outbox(pool: pool),
                migrator: Migrator(directory: TestDatabase.migrationsDirectory), metrics: Metrics())
            let server = try HTTPServer(
                configuration: HTTPServerConfiguration(listenAddress: ListenAddress(host: "127.0.0.1", port: 0)),
                clock: SystemClock(), metrics: Metrics(), handler: LiveVisitsAPI(environment: environment).handler())
            try await withRunning({ try await server.run() }) { running in
                let client = RawHTTPClient(port: server.address.port)
                try await eventually("the server answers /healthz") {
                    (try? await client.send("GET", "/healthz"))?.status == 200
                }
                let answer = await withDeadline(seconds: 20) { try? await client.send("GET", "/readyz") }
                let ready = try #require(answer ?? nil, "/readyz answered within 20 s (its own deadline is 3 s)")
                #expect(ready.status == 503)
                #expect(ready.errorCode == "database_unreachable")
                #expect((ready.json?["checks"] as? [String: Any])?["database"] as? String == "no answer")
            }
        }
    }
}

/// A TCP listener on loopback that never accepts: the kernel completes each handshake, then nothing.
final class SilentListener: Sendable {
    let port: UInt16
    private let descriptor: Int32

    init() throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw RawHTTPError(description: "socket() failed") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0, listen(fd, 16) == 0 else {
            Glibc.close(fd)
            throw RawHTTPError(description: "bind/listen failed")
        }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        port = UInt16(bigEndian: address.sin_port)
        descriptor = fd
    }

    func close() { Glibc.close(descriptor) }
}
