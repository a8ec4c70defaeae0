extension PostgresPool {
    /// Opens a pool, lends it to `body` and closes it when `body` returns or throws, so a command never
    /// leaves its connections to a `defer { Task { close } }` that may not run before the process exits.
    public static func withPool<T>(
        _ configuration: PostgresConfiguration, _ body: (PostgresPool) async throws -> T
    ) async throws -> T {
        let pool = PostgresPool(configuration: configuration)
        do {
            let result = try await body(pool)
            await pool.close()
            return result
        } catch {
            await pool.close()
            throw error
        }
    }
}
