import APNsSimulator
import Foundation
import JSON
import Postgres
import Runtime
import TestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// The API and a worker behind PgBouncer in transaction mode (Debian `pgbouncer`), with two server
/// connections for the API's six and the worker's eight, so that consecutive transactions of one client run
/// on different server connections: prepared statements off (`LIVEVISITS_DB_PREPARED_STATEMENTS=off`), LISTEN
/// straight to PostgreSQL (`LIVEVISITS_DATABASE_LISTEN_URL`). Every request answers as without the proxy
/// and every visit's `end` reaches APNs.
@Suite(.timeLimit(.minutes(2))) struct PgBouncerTests {
    @Test func theAPIAndAWorkerWorkThroughPgBouncerInTransactionMode() async throws {
        let pgbouncer = try requireTool("/usr/sbin/pgbouncer", installedBy: "pgbouncer")
        try await withTestDatabase(poolSize: 1) { url, pool in
            try await Fleet.with { fleet in
                let direct = try #require(URLComponents(string: url))
                let name = direct.path.trimmingCharacters(in: CharacterSet(charactersIn: "/"))
                guard let port = LoopbackPort.bindable() else { throw Fleet.Failure("no free loopback port") }
                let config = fleet.folder.appendingPathComponent("pgbouncer.ini").path
                let users = fleet.folder.appendingPathComponent("users.txt").path
                try "\"livevisits\" \"\"\n".write(toFile: users, atomically: true, encoding: .utf8)
                try """
                [databases]
                \(name) = host=\(direct.host ?? "127.0.0.1") port=\(direct.port ?? 5432) dbname=\(name)
                [pgbouncer]
                listen_addr = 127.0.0.1
                listen_port = \(port)
                unix_socket_dir =
                auth_type = trust
                auth_file = \(users)
                pool_mode = transaction
                default_pool_size = 2
                max_client_conn = 100
                ignore_startup_parameters = extra_float_digits,options
                pidfile =

                """.write(toFile: config, atomically: true, encoding: .utf8)
                // PgBouncer refuses to run as root; as root it runs as the postgres user (like scripts/pg's clusters).
                let asRoot = getuid() == 0
                if asRoot {
                    try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: fleet.folder.path)
                }
                let bouncer = fleet.adopt(
                    try ChildProcess(
                        asRoot ? "/usr/sbin/runuser" : pgbouncer, asRoot ? ["-u", "postgres", "--", pgbouncer, config] : [config]
                    ).start(stdout: .file(fleet.log("pgbouncer")), stderr: .file(fleet.log("pgbouncer") + ".err")))
                let proxied = "postgresql://livevisits@127.0.0.1:\(port)/\(name)"
                try await eventually("pgbouncer accepts connections", within: 30, pollingEvery: 0.1) {
                    guard bouncer.isRunning else { throw Fleet.Failure("pgbouncer exited: \(fleet.output("pgbouncer"))") }
                    return (try? PostgresConnection(url: proxied, connectTimeoutSeconds: 2, usePreparedStatements: false)) != nil
                }

                let behindProxy = ["LIVEVISITS_DB_PREPARED_STATEMENTS": "off", "LIVEVISITS_DATABASE_LISTEN_URL": url]
                let dispatcher = try await fleet.dispatcherKey(databaseURL: url)
                let (_, api) = try await fleet.startAPI(databaseURL: proxied, name: "api", adding: behindProxy)
                try fleet.startWorker(databaseURL: proxied, name: "worker", adding: behindProxy)

                let minted = try await api.send(
                    "POST", "/v1/keys", key: dispatcher, body: ["role": "customer", "subject": "c-1"])
                #expect(minted.status == 201)
                let customer = try #require(minted.json["key"]?.stringValue)
                let visits = 40
                let problems = try await withThrowingTaskGroup(of: [String].self) { group in
                    for v in 0..<visits {
                        group.addTask {
                            try await VisitPlay.play(visit: v, apis: [api], dispatcher: dispatcher, customer: customer)
                        }
                    }
                    return try await group.reduce(into: []) { $0 += $1 }
                }
                #expect(problems.isEmpty, "answers through PgBouncer: \(problems.prefix(10))")
                let listed = try await api.send("GET", "/v1/visits?limit=5", key: dispatcher)
                #expect(listed.status == 200)
                #expect(listed.json["visits"]?.arrayElements?.count == 5)

                let tokens = Set((0..<visits).map { token("t\($0)") })
                try await eventually("an end at APNs for each of the \(visits) visits", within: 60, pollingEvery: 0.2) {
                    guard bouncer.isRunning else { throw Fleet.Failure("pgbouncer exited: \(fleet.output("pgbouncer"))") }
                    let ended = fleet.simulator.deliveries().filter { $0.accepted && $0.aps?["event"]?.stringValue == "end" }
                    return tokens.isSubset(of: Set(ended.compactMap(\.deviceToken)))
                }
            }
        }
    }
}
