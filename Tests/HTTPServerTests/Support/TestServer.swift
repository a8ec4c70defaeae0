import Foundation
import HTTPServer
import Runtime
import Synchronization

/// A server on a free port, running in a task of its own.
struct RunningServer: Sendable {
    let server: HTTPServer
    let task: Task<Void, any Error>
    var port: UInt16 { server.address.port }

    /// Cancels `run()` and waits for the graceful shutdown to finish.
    func stop() async throws {
        task.cancel()
        try await task.value
    }
}

extension HTTPServerConfiguration {
    /// Port 0 on the loopback interface, otherwise the defaults unless changed.
    static func test(_ change: (inout HTTPServerConfiguration) -> Void = { _ in }) -> HTTPServerConfiguration {
        var configuration = HTTPServerConfiguration(listenAddress: ListenAddress(host: "127.0.0.1", port: 0))
        change(&configuration)
        return configuration
    }
}

func startServer(
    _ configuration: HTTPServerConfiguration = .test(), clock: any WallClock = SystemClock(),
    metrics: Metrics = Metrics(), handler: @escaping HTTPHandler
) throws -> RunningServer {
    let server = try HTTPServer(
        configuration: configuration, clock: clock, logger: Logger(label: "http-test"), metrics: metrics,
        handler: handler)
    let task = Task { try await server.run() }
    return RunningServer(server: server, task: task)
}

/// Lends a server started as `startServer` starts it to `body`, then stops it and waits for its graceful
/// shutdown, also when `body` throws. A server whose `run()` failed fails the test once `body` returned.
func withServer<Result>(
    _ configuration: HTTPServerConfiguration = .test(), clock: any WallClock = SystemClock(),
    metrics: Metrics = Metrics(), handler: @escaping HTTPHandler,
    isolation: isolated (any Actor)? = #isolation,
    _ body: (RunningServer) async throws -> Result
) async throws -> Result {
    let running = try startServer(configuration, clock: clock, metrics: metrics, handler: handler)
    let result: Result
    do {
        result = try await body(running)
    } catch {
        try? await running.stop()
        throw error
    }
    try await running.stop()
    return result
}
