/// Where the fleet keeps the one provider token every process presents.
///
/// A PostgreSQL lease row backs it in production, so that every `serve`/`worker` process on one
/// database presents the same token and only one of them mints a new one;
/// `InMemoryProviderTokenStore` serves a single process and tests.
public protocol ProviderTokenStore: Sendable {
    /// The token the fleet presents now, if any.
    func load() async throws -> ProviderToken?

    /// Installs `new` if the stored token is still `expected` (`nil`: none stored), and returns the
    /// token now stored: `new` when this caller won, the other writer's token when it lost.
    func compareAndSet(expected: ProviderToken?, new: ProviderToken) async throws -> ProviderToken
}
