import APIStores
import EventStore
import Foundation
import HTTPAPI
import HTTPServer
import Outbox
import PersonalData
import Postgres
import Runtime
import VisitCommands
import VisitDomain
import VisitProjections

/// `livevisits-bench api [--connections 1,16,64] [--duration S] [--visits N] [--rounds N] [--idempotency-keys] [--keep]`: drives
/// `POST /v1/visits/{id}/events` (progress events spread over many visits) through a child
/// `livevisits serve --api-only` with wrk over keep-alive connections, then runs the same command
/// in-process (`VisitCommandBatcher`: event, read model and push intent in one transaction, as the route) at the
/// same concurrency, and prints requests/s, p50/p99, the HTTP/in-process ratio and the server's VmRSS. Each
/// measurement starts from vacuumed tables and a checkpoint (`ScratchDatabase.settle`), as `pipeline`'s do. With
/// `--rounds N` (default 3) the two alternate N times per concurrency and the medians are compared, so that a
/// burst of load from elsewhere on the machine lands on both sides rather than on one. With `--idempotency-keys`
/// every HTTP request carries a fresh `Idempotency-Key` (the route then stores its answer with one more
/// statement of the command's group-commit batch); the in-process figure stays the unkeyed command's.
/// With `--get` it reads instead: `GET /v1/visits/{id}` of visits whose personal fields are sealed (the server
/// is given a key file), against the same request through the API's handler in-process — what an answer's
/// opening (`PersonalDataOpener`, the customer's data key) costs shows in both.
struct APIBenchmark {
    static let summary = "wrk on POST /v1/visits/{id}/events at 1/16/64 connections vs the in-process command"
    var connections = [1, 16, 64]
    var duration = 10
    var visits = 2000
    var rounds = 3
    var idempotencyKeys = false
    var get = false
    var keep = false

    static let syntax = CommandSyntax(
        command: "livevisits-bench api", summary: summary,
        options: [
            .value("--connections", "LIST", "wrk connections per measurement (default 1,16,64)"),
            .value("--duration", "SECONDS", "seconds per measurement (default 10)"),
            .value("--visits", "N", "visits the events are spread over (default 2000)"),
            .value("--rounds", "N", "HTTP/in-process alternations per concurrency (default 3)"),
            .flag("--idempotency-keys", "every HTTP request carries a fresh Idempotency-Key"),
            .flag("--get", "GET /v1/visits/{id} of sealed visits (the server given a key file) instead of posting events"),
            .flag("--keep", "keep the scratch database"),
        ],
        details: "Needs LIVEVISITS_DATABASE_URL, wrk and a built livevisits next to this binary.")

    init(arguments: [String]) throws {
        let parsed = try Self.syntax.parse(arguments)
        connections = try parsed.integers("--connections", in: 1...Int.max) ?? connections
        duration = try parsed.integer("--duration", in: 1...Int.max) ?? duration
        visits = try parsed.integer("--visits", in: 1...Int.max) ?? visits
        rounds = try parsed.integer("--rounds", in: 1...Int.max) ?? rounds
        idempotencyKeys = parsed.has("--idempotency-keys")
        get = parsed.has("--get")
        if get && idempotencyKeys { throw Self.syntax.mistake("--get and --idempotency-keys exclude each other") }
        keep = parsed.has("--keep")
    }

    /// One measured run.
    struct Figures {
        var requestsPerSecond: Double
        var p50Milliseconds: Double
        var p99Milliseconds: Double
        var errors: Int
        /// Commands per group-commit batch (mean over the run).
        var meanBatch: Double
    }

    func run() async throws {
        let serverURL = try BenchmarkEnvironment.serverURL()
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/wrk") else {
            throw BenchmarkUsageError(message: "wrk is not installed (apt-get install wrk)")
        }
        let root = URL(fileURLWithPath: FileManager.default.currentDirectoryPath)
        let executable = try BenchmarkEnvironment.livevisits()
        let database = try await ScratchDatabase.create(
            serverURL: serverURL, migrations: root.appendingPathComponent("Migrations"))
        let projections = root.appendingPathComponent("Projections")
        let rules = try ProjectionRules.load(directory: projections)
        let readModel = try VisitReadModel(projectionsDirectory: projections, rules: rules)
        let pool = PostgresPool(configuration: PostgresConfiguration(url: database.url, size: 24))
        // With --get the visits' personal fields are sealed under a key file the server is given too.
        let keyPath = FileManager.default.temporaryDirectory.appendingPathComponent("lv-bench-\(UUID().uuidString).key").path
        defer { try? FileManager.default.removeItem(atPath: keyPath) }
        let personalData = get ? PersonalDataKeys(current: try WrappingKey.generate(path: keyPath)) : nil
        let handler = VisitCommandHandler(
            store: EventStore(pool: pool), readModel: readModel, pushes: OutboxPushes(outbox: Outbox(pool: pool)),
            personalData: personalData)
        let context = VisitCommandContext(actor: EventMetadata(actorRole: "dispatcher", actorSubject: "bench"))
        let key = try await pool.withConnection { try APIKeys.mint(role: .dispatcher, subject: nil, createdBy: nil, on: $0).key }

        // Two sets of visits (HTTP and in-process), each a fresh stream per run so streams stay short; reads
        // change nothing, so --get reads one set from both sides.
        let runs = connections.count * rounds
        if get {
            print("scheduling \(visits) visits (personal fields sealed) in \(database.name) …")
            try await schedule(prefix: "g", runs: 1, handler: handler, context: context)
        } else {
            print("scheduling \(visits * runs * 2) visits in \(database.name) …")
            try await schedule(prefix: "h", runs: runs, handler: handler, context: context)
            try await schedule(prefix: "p", runs: runs, handler: handler, context: context)
        }
        let reader = get ? try InProcessReader(pool: pool, readModel: readModel, personalData: personalData!, key: key) : nil
        defer { reader?.stop() }

        guard let port = LoopbackPort.bindable() else { throw BenchmarkUsageError(message: "cannot find a free port") }
        var environment = ProcessInfo.processInfo.environment
        environment["LIVEVISITS_DATABASE_URL"] = database.url
        environment["LIVEVISITS_HTTP_ADDR"] = "127.0.0.1:\(port)"
        // wrk is one client address with many connections, as a proxy is: no per-address limit.
        environment["LIVEVISITS_HTTP_MAX_CONNECTIONS_PER_IP"] = "0"
        environment["LIVEVISITS_PROJECTIONS_DIR"] = projections.path
        environment["LIVEVISITS_MIGRATIONS_DIR"] = root.appendingPathComponent("Migrations").path
        environment["LIVEVISITS_LOG_LEVEL"] = "warning"
        // One key drives the load: the per-key rate limit stays on, far above it, unless the run sets its own.
        if environment["LIVEVISITS_RATE_LIMIT"] == nil { environment["LIVEVISITS_RATE_LIMIT"] = "1000000" }
        if get { environment["LIVEVISITS_PERSONAL_DATA_KEY_FILE"] = keyPath }
        let server = try ChildProcess(executable.path, ["serve", "--api-only"], environment: environment).start(stderr: .inherit)
        defer {
            if server.isRunning {
                server.signal(SIGTERM)
                _ = server.waitBlocking()
            }
        }
        try await waitForHealth(port: port, server: server)
        print(String(format: "server pid %d on 127.0.0.1:%d, VmRSS at start %.1f MB", server.pid, Int(port), rss(server.pid)))

        let script = FileManager.default.temporaryDirectory.appendingPathComponent("lv-bench-\(UUID().uuidString).lua")
        defer { try? FileManager.default.removeItem(at: script) }
        print("")
        if idempotencyKeys {
            print("HTTP requests carry a fresh Idempotency-Key each; the in-process command is the unkeyed one")
        }
        if get { print("GET /v1/visits/{id} of sealed visits; in-process: the same request through the API's handler") }
        print(
            "conns   HTTP req/s   p50 ms   p99 ms   errors  batch | in-process req/s   p50 ms   p99 ms  batch | ratio   server VmRSS MB"
        )
        var peak = 0.0
        var cpuLines: [String] = []
        /// CPU microseconds per request of a run.
        func perRequest(_ seconds: Double, _ figures: Figures) -> Double {
            seconds * 1e6 / max(figures.requestsPerSecond * Double(duration), 1)
        }
        var medians: [String] = []
        for (index, count) in connections.enumerated() {
            var httpRates: [Double] = []
            var localRates: [Double] = []
            var httpP99s: [Double] = []
            for round in 0..<rounds {
                let run = index * rounds + round
                try luaScript(key: key, prefix: get ? "g0-" : "h\(run)-").write(to: script, atomically: true, encoding: .utf8)
                // Each measurement from vacuumed tables and a checkpoint, as `pipeline`'s (finding 50): the WAL of the
                // rounds before owed one, whose sync otherwise landed in a later round (its p99 above 100 ms).
                try await database.settle()
                let before = batchCounters(port: port)
                let cpuBefore = CPUSample.take(process: server.pid)
                var http = try runWrk(port: port, connections: count, script: script)
                let httpCPU = CPUSample.take(process: server.pid) - cpuBefore
                let after = batchCounters(port: port)
                http.meanBatch = (after.commands - before.commands) / max(after.batches - before.batches, 1)
                let memory = rss(server.pid)
                peak = max(peak, memory)
                try await database.settle()
                let localBefore = CPUSample.take(process: server.pid)
                let local =
                    if let reader {
                        try await reader.run(prefix: "g0-", visits: visits, concurrency: count, duration: duration)
                    } else {
                        try await runInProcess(prefix: "p\(run)-", concurrency: count, handler: handler, context: context)
                    }
                httpRates.append(http.requestsPerSecond)
                localRates.append(local.requestsPerSecond)
                httpP99s.append(http.p99Milliseconds)
                let localCPU = CPUSample.take(process: server.pid) - localBefore
                cpuLines.append(
                    String(
                        format:
                            "%5d   HTTP: server %4.0f  wrk %4.0f  postgres %4.0f  = %4.0f | in-process: bench %4.0f  postgres %4.0f  = %4.0f | server switches/request %.2f",
                        count, perRequest(httpCPU.process, http), perRequest(httpCPU.children, http),
                        perRequest(httpCPU.postgres, http),
                        perRequest(httpCPU.process + httpCPU.children + httpCPU.postgres, http),
                        perRequest(localCPU.this, local), perRequest(localCPU.postgres, local),
                        perRequest(localCPU.this + localCPU.postgres, local),
                        perRequest(httpCPU.switches, http) / 1e6))
                print(
                    String(
                        format: "%5d %12.0f %8.2f %8.2f %8d %6.1f | %16.0f %8.2f %8.2f %6.1f | %5.2f %12.1f",
                        count, http.requestsPerSecond, http.p50Milliseconds, http.p99Milliseconds, http.errors, http.meanBatch,
                        local.requestsPerSecond, local.p50Milliseconds, local.p99Milliseconds, local.meanBatch,
                        http.requestsPerSecond / max(local.requestsPerSecond, 0.001), memory))
            }
            let httpMedian = median(httpRates)
            let localMedian = median(localRates)
            medians.append(
                String(
                    format: "%5d %11.0f %12.2f %17.0f %10.2f", count, httpMedian, median(httpP99s), localMedian,
                    httpMedian / max(localMedian, 0.001)))
        }
        print(String(format: "server peak VmRSS %.1f MB", peak))
        print("")
        print("medians over \(rounds) alternating round(s)")
        print("conns  HTTP req/s  HTTP p99 ms  in-process req/s      ratio")
        for line in medians { print(line) }
        print("")
        print("CPU µs per request (utime + stime; postgres = every postgres process on the machine)")
        for line in cpuLines { print(line) }
        _ = await server.stop()
        await pool.close()
        if keep { print("kept database \(database.name)") } else { await database.drop() }
    }

    /// The middle value (the mean of the two middle ones for an even count).
    func median(_ values: [Double]) -> Double {
        let sorted = values.sorted()
        guard !sorted.isEmpty else { return 0 }
        let middle = sorted.count / 2
        return sorted.count % 2 == 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2
    }

    func schedule(prefix: String, runs: Int, handler: VisitCommandHandler, context: VisitCommandContext) async throws {
        let start = Int(Date().timeIntervalSince1970) + 900
        let all = (0..<runs).flatMap { run in (0..<visits).map { "\(prefix)\(run)-\($0)" } }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for lane in 0..<8 {
                group.addTask {
                    for id in stride(from: lane, to: all.count, by: 8) {
                        let body = """
                            {"visitId":"\(all[id])","customerId":"c-\(id % 97)",\
                            "attributes":{"customerFirstName":"Alex","serviceAddress":"12 Elm Row","jobSummary":"Boiler check"},\
                            "technician":{"id":"t-\(id % 13)","name":"Sam","avatarSymbol":"person.crop.circle","vanDescription":"White van"},\
                            "arrivalWindow":{"start":\(start),"end":\(start + 600)},"kilometresAway":14.0}
                            """
                        _ = try await handler.schedule(
                            try ScheduleVisitRequest.parse(Array(body.utf8)) { all[id] }, context: context)
                    }
                }
            }
            try await group.waitForAll()
        }
    }

    /// A wrk script: each request a progress event on a random visit of this run's set.
    func luaScript(key: String, prefix: String) -> String {
        """
        math.randomseed(42)
        wrk.method = "\(get ? "GET" : "POST")"
        wrk.headers["Authorization"] = "Bearer \(key)"
        wrk.headers["Content-Type"] = "application/json"
        local threads = 0
        setup = function(thread)
          threads = threads + 1
          thread:set("tid", threads)
        end
        sent = 0
        request = function()
          local v = math.random(0, \(visits - 1))
          local km = math.random(1, 400) / 10
          local headers = nil
          if \(idempotencyKeys) then
            sent = sent + 1
            headers = { ["Idempotency-Key"] = "\(prefix)" .. tid .. "-" .. sent }
            for name, value in pairs(wrk.headers) do headers[name] = value end
          end
          if \(get) then return wrk.format(nil, "/v1/visits/\(prefix)" .. v) end
          return wrk.format(nil, "/v1/visits/\(prefix)" .. v .. "/events", headers, '{"type":"progress","kilometresAway":' .. km .. '}')
        end
        done = function(summary, latency, requests)
          io.write(string.format("LV %f %f %d %d\\n", latency:percentile(50), latency:percentile(99),
            summary.requests, summary.errors.status + summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.timeout))
        end
        """
    }

    func runWrk(port: UInt16, connections: Int, script: URL) throws -> Figures {
        let wrk = ChildProcess(
            "/usr/bin/wrk",
            [
                "-t", "\(min(connections, 2))", "-c", "\(connections)", "-d", "\(duration)s",
                "--timeout", "10s", "-s", script.path, "http://127.0.0.1:\(port)",
            ])
        let output = try wrk.runBlocking().stdout
        guard let line = output.split(separator: "\n").first(where: { $0.hasPrefix("LV ") }) else {
            throw BenchmarkUsageError(message: "wrk gave no figures:\n\(output)")
        }
        let parts = line.split(separator: " ").dropFirst().compactMap { Double($0) }
        let rate =
            output.split(separator: "\n").first { $0.hasPrefix("Requests/sec:") }
            .flatMap { Double($0.split(separator: " ").last ?? "") } ?? parts[2] / Double(duration)
        return Figures(
            requestsPerSecond: rate, p50Milliseconds: parts[0] / 1000, p99Milliseconds: parts[1] / 1000, errors: Int(parts[3]),
            meanBatch: 0)
    }

    /// The same command without HTTP: `concurrency` tasks posting for `duration` seconds.
    func runInProcess(prefix: String, concurrency: Int, handler: VisitCommandHandler, context: VisitCommandContext) async throws
        -> Figures
    {
        let deadline = Date().addingTimeInterval(Double(duration))
        let visits = self.visits
        // Group commit tuned as the server's (which inherits this environment), so that the ratio compares like
        // with like when a run sets LIVEVISITS_COMMAND_BATCHES or LIVEVISITS_COMMAND_WRITES.
        let environment = ProcessInfo.processInfo.environment
        let batcher = VisitCommandBatcher(
            handler: handler,
            maxConcurrentBatches: environment["LIVEVISITS_COMMAND_BATCHES"].flatMap { Int($0) }
                ?? VisitCommandBatcher.defaultConcurrentBatches,
            maxConcurrentWrites: environment["LIVEVISITS_COMMAND_WRITES"].flatMap { Int($0) }
                ?? VisitCommandBatcher.defaultConcurrentWrites)
        let started = Date()
        let latencies = try await withThrowingTaskGroup(of: [Double].self) { group in
            for lane in 0..<concurrency {
                group.addTask {
                    var generator = SystemRandomNumberGenerator()
                    var mine: [Double] = []
                    _ = lane
                    while Date() < deadline {
                        let visit = "\(prefix)\(Int.random(in: 0..<visits, using: &generator))"
                        let km = Double(Int.random(in: 1...400, using: &generator)) / 10
                        let event = try VisitEventRequest.parse(Array("{\"type\":\"progress\",\"kilometresAway\":\(km)}".utf8))
                        let t0 = Date()
                        // What the route runs: the command (with the read its answer needs) through group commit,
                        // then the wake-ups of followers and outbox workers after the commit.
                        let result = try await batcher.execute(
                            VisitCommand(
                                visitId: visit, event: event, context: context, isCreation: false, withFollowers: true))
                        handler.store.eventsCommitted(count: 1)
                        if result.pushes > 0 { handler.pushes.committed() }
                        mine.append(Date().timeIntervalSince(t0))
                    }
                    return mine
                }
            }
            return try await group.reduce(into: [Double]()) { $0 += $1 }
        }
        return Figures(
            latencies: latencies, elapsed: Date().timeIntervalSince(started), errors: 0,
            meanBatch: Double(latencies.count) / Double(max(batcher.batchesRun, 1)))
    }

    func waitForHealth(port: UInt16, server: RunningChild) async throws {
        for _ in 0..<200 {
            if healthy(port: port) { return }
            if let status = server.exitStatus() { throw BenchmarkUsageError(message: "the server exited (status \(status))") }
            try await Task.sleep(nanoseconds: 50_000_000)
        }
        throw BenchmarkUsageError(message: "the server did not come up on port \(port)")
    }

    /// `GET /healthz` answers 200 (a plain socket: no HTTP client library needed).
    func healthy(port: UInt16) -> Bool {
        get(port: port, path: "/healthz").hasPrefix("HTTP/1.1 200")
    }

    /// The server's group-commit counters (`livevisits_command_batches_total`, `…_batched_total`) from `/metrics`.
    func batchCounters(port: UInt16) -> (batches: Double, commands: Double) {
        let values = MetricsText.values(get(port: port, path: "/metrics"))
        return (values["livevisits_command_batches_total"] ?? 0, values["livevisits_command_batched_total"] ?? 0)
    }

    /// One `GET` over a fresh connection, the whole answer as text ("" when the server cannot be reached).
    func get(port: UInt16, path: String) -> String {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = port.bigEndian
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
            }
        }
        guard connected else { return "" }
        let request = Array("GET \(path) HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".utf8)
        guard request.withUnsafeBytes({ Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }) == request.count else {
            return ""
        }
        var answer: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 16_384)
        while true {
            let n = recv(fd, &buffer, buffer.count, 0)
            if n <= 0 { break }
            answer += buffer[0..<n]
        }
        return String(decoding: answer, as: UTF8.self)
    }

    /// Resident memory of a process in MB (VmRSS from /proc).
    func rss(_ pid: Int32) -> Double {
        guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
            let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") }),
            let kb = line.split(separator: " ").compactMap({ Double($0) }).first
        else { return 0 }
        return kb / 1024
    }
}

extension APIBenchmark.Figures {
    /// The figures of in-process requests: `latencies` (seconds, one per request answered) over `elapsed` seconds.
    init(latencies: [Double], elapsed: Double, errors: Int, meanBatch: Double) {
        let sorted = latencies.sorted()
        func percentile(_ p: Double) -> Double {
            sorted.isEmpty ? 0 : sorted[min(sorted.count - 1, Int(Double(sorted.count) * p))] * 1000
        }
        self.init(
            requestsPerSecond: Double(sorted.count) / elapsed, p50Milliseconds: percentile(0.5),
            p99Milliseconds: percentile(0.99), errors: errors, meanBatch: meanBatch)
    }
}
