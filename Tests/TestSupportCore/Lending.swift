/// Lends what `open` makes to `body` and awaits `close` on it once `body` has returned or thrown, so a
/// test never leaves a server, pool or simulator to a `defer { Task { close } }` that may still be running
/// when the next test starts (or not run at all before the process exits). Nested calls close in the
/// reverse order of opening: the inner resource is closed before the outer one's `close` starts.
/// When `open` throws there is nothing to close and its error is thrown as it is; when `body` throws, its
/// error is thrown after `close` has finished.
public func withResource<Resource, Result>(
    _ open: () async throws -> Resource,
    close: (Resource) async -> Void,
    isolation: isolated (any Actor)? = #isolation,
    _ body: (Resource) async throws -> Result
) async throws -> Result {
    let resource = try await open()
    let result: Result
    do {
        result = try await body(resource)
    } catch {
        await close(resource)
        throw error
    }
    await close(resource)
    return result
}

/// Runs `service` (a `run()` that serves until its task is cancelled) in a task of its own while `body`
/// runs, then cancels that task and waits for it to end, also when `body` throws: a worker or server a test
/// started never outlives the test. `body` gets the task, for a test about the stop itself (cancel it and
/// await its value there).
public func withRunning<Result>(
    _ service: @escaping @Sendable () async throws -> Void,
    isolation: isolated (any Actor)? = #isolation,
    _ body: (Task<Void, any Error>) async throws -> Result
) async throws -> Result {
    try await withResource(
        { Task { try await service() } },
        close: { task in
            task.cancel()
            _ = await task.result
        }, body)
}
