// Benchmark of the HTTPServer target alone: wrk drives a trivial JSON route over keep-alive
// connections at 1, 16 and 64 connections; the same route is also called in-process (Router.handle
// from 64 concurrent tasks) so the ratio shows what the HTTP layer costs.
//
//   swift build -c release --product http-server-bench
//   .build/release/http-server-bench [--seconds 10] [--connections 1,16,64] [--threads N (wrk)]
//       [--server-threads N (libmicrohttpd)] [--turbo] 2>/dev/null
//
// Request log lines go to stderr as in production; send them to /dev/null (or a file) when running.
import Foundation
import HTTPServer
import Runtime

struct Options {
    var seconds = 10
    var connections = [1, 16, 64]
    var threads = 2
    var serverThreads = 2
    var turbo = false

    static let syntax = CommandSyntax(
        command: "http-server-bench",
        summary: "wrk against the HTTPServer target alone (a trivial JSON route) vs the same route in-process.",
        options: [
            .value("--seconds", "N", "seconds per measurement (default 10)"),
            .value("--connections", "LIST", "wrk connections, comma-separated (default 1,16,64)"),
            .value("--threads", "N", "wrk threads (default 2)"),
            .value("--server-threads", "N", "libmicrohttpd threads (default 2)"),
            .flag("--turbo", "libmicrohttpd's turbo mode"),
        ])

    init(_ arguments: [String]) throws {
        let parsed = try Self.syntax.parse(Array(arguments.dropFirst()))
        seconds = try parsed.integer("--seconds", in: 1...Int.max) ?? seconds
        connections = try parsed.integers("--connections", in: 1...Int.max) ?? connections
        threads = try parsed.integer("--threads", in: 1...Int.max) ?? threads
        serverThreads = try parsed.integer("--server-threads", in: 1...Int.max) ?? serverThreads
        turbo = parsed.has("--turbo")
    }
}

struct WrkResult {
    var requestsPerSecond: Double
    var p50: String
    var p99: String
    var errors: String
}

func makeRouter() -> Router {
    var router = Router()
    router.add(.post, "/v1/visits/{id}/events") { request, parameters in
        let body = #"{"visitId":"\#(parameters["id"] ?? "")","version":2,"status":"nearby","bytes":\#(request.body.count)}"#
        return .json(status: 201, body: Data(body.utf8))
    }
    return router
}

func residentMegabytes() -> (current: Double, peak: Double) {
    guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return (0, 0) }
    func field(_ name: String) -> Double {
        for line in status.split(separator: "\n") where line.hasPrefix(name) {
            let kilobytes = line.split(separator: " ").compactMap { Double($0) }.first ?? 0
            return kilobytes / 1024
        }
        return 0
    }
    return (field("VmRSS:"), field("VmHWM:"))
}

func runWrk(port: UInt16, connections: Int, threads: Int, seconds: Int, script: String) throws -> WrkResult {
    let output = try ChildProcess(
        "/usr/bin/wrk",
        [
            "-t", String(min(threads, connections)), "-c", String(connections), "-d", "\(seconds)s", "--latency",
            "-s", script, "http://127.0.0.1:\(port)/v1/visits/v-1001/events",
        ]
    ).runBlocking().stdout
    var result = WrkResult(requestsPerSecond: 0, p50: "?", p99: "?", errors: "none")
    for line in output.split(separator: "\n") {
        let words = line.split(separator: " ", omittingEmptySubsequences: true)
        if line.hasPrefix("Requests/sec:"), let value = words.last.flatMap({ Double($0) }) {
            result.requestsPerSecond = value
        } else if words.first == "50.000%" || words.first == "50%" {
            result.p50 = String(words.last ?? "?")
        } else if words.first == "99.000%" || words.first == "99%" {
            result.p99 = String(words.last ?? "?")
        } else if line.contains("Socket errors") || line.contains("Non-2xx") {
            result.errors = line.trimmingCharacters(in: .whitespaces)
        }
    }
    return result
}

/// The same route without HTTP: Router.handle from `concurrency` tasks for `seconds`.
func inProcess(_ router: Router, concurrency: Int, seconds: Double) async -> Double {
    let body = Data(#"{"type":"nearby","kilometresAway":1.2,"arrivalWindow":{"start":1790000300,"end":1790000900}}"#.utf8)
    let request = HTTPRequest(method: .post, rawPath: "/v1/visits/v-1001/events", body: body)
    let deadline = ContinuousClock.now + .seconds(seconds)
    let total = await withTaskGroup(of: Int.self) { group in
        for _ in 0..<concurrency {
            group.addTask {
                var count = 0
                while ContinuousClock.now < deadline {
                    _ = await router.handle(request)
                    count += 1
                }
                return count
            }
        }
        var sum = 0
        for await count in group { sum += count }
        return sum
    }
    return Double(total) / seconds
}

let options: Options
do {
    options = try Options(CommandLine.arguments)
} catch let help as HelpRequest {
    print(help.usage)
    exit(0)
} catch {
    FileHandle.standardError.write(Data("\(error)\n".utf8))
    exit(2)
}
let script = FileManager.default.temporaryDirectory.appendingPathComponent("http-server-bench-\(getpid()).lua").path
try #"""
wrk.method = "POST"
wrk.body = '{"type":"nearby","kilometresAway":1.2,"arrivalWindow":{"start":1790000300,"end":1790000900}}'
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Authorization"] = "Bearer bench-not-a-real-key"
"""#.write(toFile: script, atomically: true, encoding: .utf8)
defer { try? FileManager.default.removeItem(atPath: script) }

let router = makeRouter()
let server = try HTTPServer(
    configuration: HTTPServerConfiguration(
        // wrk is one client address with many connections, as a proxy is: no per-address limit.
        listenAddress: ListenAddress(host: "127.0.0.1", port: 0), perAddressConnectionLimit: 0,
        threadCount: options.serverThreads, turbo: options.turbo),
    logger: Logger(label: "http-bench"), handler: router.handler)
let serving = Task { try await server.run() }
try await Task.sleep(nanoseconds: 200_000_000)

let baseline = await inProcess(router, concurrency: 64, seconds: Double(options.seconds) / 2)
print(
    "http-server-bench: POST /v1/visits/{id}/events, trivial JSON handler, \(options.seconds)s per run, "
        + "\(ProcessInfo.processInfo.activeProcessorCount) cores, \(options.serverThreads) server threads"
        + (options.turbo ? ", turbo" : ""))
print(String(format: "in-process Router.handle (64 tasks): %.0f req/s", baseline))
// What HTTP adds per request, in microseconds of the whole machine: 1/rps(http) - 1/rps(in-process).
// A command costing C µs in-process reaches C / (C + added) of its throughput over HTTP.
print("connections  req/s      p50        p99        added-µs/req  errors")
for connections in options.connections {
    let result = try runWrk(
        port: server.address.port, connections: connections, threads: options.threads, seconds: options.seconds,
        script: script)
    print(
        String(
            format: "%11d  %-9.0f  %-9@  %-9@  %-12.1f  %@", connections, result.requestsPerSecond, result.p50 as NSString,
            result.p99 as NSString, 1e6 / max(result.requestsPerSecond, 1) - 1e6 / baseline, result.errors as NSString))
}
let memory = residentMegabytes()
print(String(format: "server RSS: %.1f MB now, %.1f MB peak", memory.current, memory.peak))
serving.cancel()
try await serving.value
