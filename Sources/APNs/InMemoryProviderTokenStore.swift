import Runtime

/// A `ProviderTokenStore` for one process (and for tests): the token lives in memory.
public final class InMemoryProviderTokenStore: ProviderTokenStore {
    private let token: Lock<ProviderToken?>

    public init(_ initial: ProviderToken? = nil) { token = Lock(initial) }

    public func load() async throws -> ProviderToken? { token.withLock { $0 } }

    public func compareAndSet(expected: ProviderToken?, new: ProviderToken) async throws -> ProviderToken {
        token.withLock { stored in
            if stored == expected { stored = new }
            return stored ?? new
        }
    }
}
