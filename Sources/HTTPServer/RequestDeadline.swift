import Runtime

/// The deadline of the request a handler is answering (`current`, a task-local the server sets around each
/// handler): `requestTimeout` after the request arrived, when the server answers 503 `timeout` in the
/// handler's place and cancels it. A handler that holds a request on purpose — a long poll, which answers by
/// itself once something changes or its own hold ends — moves the deadline past that hold, so the server's
/// timeout never answers first.
public struct RequestDeadline: Sendable {
    /// The deadline of the request this task answers; nil outside the server (tests, in-process callers).
    @TaskLocal public static var current: RequestDeadline?

    let serial: UInt64
    let registry: RequestRegistry
    let clock: any WallClock

    /// Moves the deadline to `seconds` from now on the server's clock, unless it is later already.
    public func extend(toSecondsFromNow seconds: Double) {
        registry.extend(serial, to: clock.now() + seconds)
    }
}
