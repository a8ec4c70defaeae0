import Runtime
import Synchronization
import Testing

@testable import APNs

@Suite(.timeLimit(.minutes(2))) struct ProviderTokenSourceTests {
    let start = 1_790_000_000.0

    private func signer() throws -> (ProviderTokenSigner, TestKey) {
        let key = try TestKey.make()
        return (ProviderTokenSigner(key: try APNsSigningKey(pem: key.pem), keyId: "KEY1234567", teamId: "TEAM123456"), key)
    }

    @Test func reusesThenRefreshesWithTheClock() async throws {
        let (signer, key) = try signer()
        defer { key.remove() }
        let clock = ManualClock(now: start)
        let source = ProviderTokenSource(signer: signer, clock: clock)
        let first = try await source.token()
        #expect(first.issuedAt == Int64(start))
        clock.advance(by: 30 * 60)
        #expect(try await source.token() == first)
        clock.advance(by: 20 * 60)
        let second = try await source.token()
        #expect(second != first)
        #expect(second.issuedAt == Int64(start + 50 * 60))
    }

    @Test func concurrentFirstCallsMintOnce() async throws {
        let (signer, key) = try signer()
        defer { key.remove() }
        let store = CountingStore()
        let source = ProviderTokenSource(signer: signer, store: store, clock: ManualClock(now: start))
        let tokens = try await withThrowingTaskGroup(of: ProviderToken.self) { group in
            for _ in 0..<50 { group.addTask { try await source.token() } }
            return try await group.reduce(into: Set<ProviderToken>()) { $0.insert($1) }
        }
        #expect(tokens.count == 1)
        #expect(store.writes == 1)
    }

    /// Two processes on one store present one token: the second adopts the first's, and at refresh
    /// time only one of them mints.
    @Test func fleetSharesOneTokenThroughTheStore() async throws {
        try await withTwoSourcesSharingAToken { a, b, store, clock, first in
            clock.advance(by: 50 * 60)
            let refreshed = try await b.token()
            #expect(refreshed != first)
            #expect(try await a.token() == refreshed)
            #expect(store.writes == 2)
        }
    }

    @Test func expiredProviderTokenForcesOneRefreshAcrossTheFleet() async throws {
        try await withTwoSourcesSharingAToken { a, b, store, clock, first in
            clock.advance(by: 30 * 60)
            #expect(a.rejectedAsExpired(first) == .refresh)
            let second = try await a.token()
            #expect(second != first)
            #expect(b.rejectedAsExpired(first) == .refresh)
            #expect(try await b.token() == second)  // adopted, not minted again
            #expect(store.writes == 2)
        }
    }

    /// Two processes' sources on one counting store and one manual clock: `a` minted the first token and
    /// `b` adopted it from the store (one write).
    private func withTwoSourcesSharingAToken(
        _ body: (ProviderTokenSource, ProviderTokenSource, CountingStore, ManualClock, ProviderToken) async throws -> Void
    ) async throws {
        let (signer, key) = try signer()
        defer { key.remove() }
        let store = CountingStore()
        let clock = ManualClock(now: start)
        let a = ProviderTokenSource(signer: signer, store: store, clock: clock)
        let b = ProviderTokenSource(signer: signer, store: store, clock: clock)
        let first = try await a.token()
        #expect(try await b.token() == first)
        #expect(store.writes == 1)
        try await body(a, b, store, clock, first)
    }

    @Test func storeFailureIsATypedError() async throws {
        let (signer, key) = try signer()
        defer { key.remove() }
        let source = ProviderTokenSource(signer: signer, store: FailingStore(), clock: ManualClock(now: start))
        let error = await #expect(throws: APNsError.self) { try await source.token() }
        #expect(error?.code == .tokenStoreFailed)
        #expect(source.policy.isMinting == false)
    }
}

/// Counts successful writes; otherwise the in-memory store.
final class CountingStore: ProviderTokenStore {
    private let inner = InMemoryProviderTokenStore()
    private let count = Mutex(0)
    var writes: Int { count.withLock { $0 } }

    func load() async throws -> ProviderToken? { try await inner.load() }

    func compareAndSet(expected: ProviderToken?, new: ProviderToken) async throws -> ProviderToken {
        let stored = try await inner.compareAndSet(expected: expected, new: new)
        if stored == new { count.withLock { $0 += 1 } }
        return stored
    }
}

struct FailingStore: ProviderTokenStore {
    struct Down: Error {}
    func load() async throws -> ProviderToken? { throw Down() }
    func compareAndSet(expected: ProviderToken?, new: ProviderToken) async throws -> ProviderToken { throw Down() }
}
