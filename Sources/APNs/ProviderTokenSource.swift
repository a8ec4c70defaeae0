import Runtime

/// Hands out the provider token each request presents: the I/O shell around `ProviderTokenPolicy`.
///
/// It mints with the signer, shares tokens through a `ProviderTokenStore` (so a fleet presents one
/// token), and lets only one caller obtain a token at a time while the others wait or keep presenting
/// the current one.
public final class ProviderTokenSource: Sendable {
    private struct State {
        var policy: ProviderTokenPolicy
        var waiters: [CheckedContinuation<Void, Never>] = []
    }

    private let state: Lock<State>
    private let signer: ProviderTokenSigner
    private let store: any ProviderTokenStore
    private let clock: any WallClock

    public init(
        signer: ProviderTokenSigner, store: any ProviderTokenStore = InMemoryProviderTokenStore(),
        clock: any WallClock = SystemClock(), settings: ProviderTokenPolicy.Settings = .init()
    ) {
        self.signer = signer
        self.store = store
        self.clock = clock
        state = Lock(State(policy: ProviderTokenPolicy(settings: settings)))
    }

    /// The token to present now; obtains a new one when the policy asks for it.
    public func token() async throws(APNsError) -> ProviderToken {
        while true {
            let now = clock.now()
            switch state.withLock({ $0.policy.decide(now: now) }) {
            case .present(let token):
                return token
            case .mint:
                return try await obtain(now: now)
            case .wait:
                await waitForObtain()
            case .unavailable(let until):
                throw APNsError(
                    code: .providerTokenUnavailable,
                    message: "no provider token may be minted for \(Int((until - now).rounded(.up))) s "
                        + "(TooManyProviderTokenUpdates cooldown or refresh interval)")
            }
        }
    }

    /// Reports a 403 `ExpiredProviderToken` answer to a request that presented `token`.
    public func rejectedAsExpired(_ token: ProviderToken) -> ProviderTokenPolicy.ExpiredReaction {
        let now = clock.now()
        return state.withLock { $0.policy.rejectedAsExpired(token, now: now) }
    }

    /// Reports a 429 `TooManyProviderTokenUpdates` answer.
    public func rejectedAsTooManyUpdates() {
        let now = clock.now()
        state.withLock { $0.policy.rejectedAsTooManyUpdates(now: now) }
    }

    /// A snapshot of the policy (for tests and diagnostics).
    public var policy: ProviderTokenPolicy { state.withLock { $0.policy } }

    private func obtain(now: Double) async throws(APNsError) -> ProviderToken {
        let settings = state.withLock { $0.policy.settings }
        do throws(APNsError) {
            let stored: ProviderToken?
            do { stored = try await store.load() } catch { throw Self.storeError(error) }
            let (current, rejected) = state.withLock { ($0.policy.current, $0.policy.currentRejected) }
            if let stored, stored != current || !rejected,
                stored.issuedAt >= current?.issuedAt ?? .min,
                stored.age(at: now) < settings.refreshAge, stored.age(at: now) > -60
            {
                finish { $0.installed(stored, mintedLocally: false, now: now) }
                return stored
            }
            let fresh = try signer.mint(issuedAt: Int64(now.rounded(.down)))
            let winner: ProviderToken
            do { winner = try await store.compareAndSet(expected: stored, new: fresh) } catch {
                throw Self.storeError(error)
            }
            finish { $0.installed(winner, mintedLocally: winner == fresh, now: now) }
            return winner
        } catch {
            finish { $0.mintFailed() }
            throw error
        }
    }

    private func finish(_ update: (inout ProviderTokenPolicy) -> Void) {
        let waiters = state.withLock { s -> [CheckedContinuation<Void, Never>] in
            update(&s.policy)
            defer { s.waiters = [] }
            return s.waiters
        }
        for waiter in waiters { waiter.resume() }
    }

    private func waitForObtain() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let ready = state.withLock { s -> Bool in
                guard s.policy.isMinting else { return true }
                s.waiters.append(continuation)
                return false
            }
            if ready { continuation.resume() }
        }
    }

    private static func storeError(_ error: any Error) -> APNsError {
        if let error = error as? APNsError { return error }
        return APNsError(
            code: .tokenStoreFailed, message: "the provider-token store failed", cause: String(describing: error))
    }
}
