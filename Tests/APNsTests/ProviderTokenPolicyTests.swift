import Testing

@testable import APNs

@Suite(.timeLimit(.minutes(2))) struct ProviderTokenPolicyTests {
    let start = 1_790_000_000.0

    private func token(at time: Double) -> ProviderToken {
        ProviderToken(jwt: "jwt-\(Int(time))", issuedAt: Int64(time))
    }

    /// Mints at `time` and installs the result.
    private func mint(_ policy: inout ProviderTokenPolicy, at time: Double) -> ProviderToken {
        #expect(policy.decide(now: time) == .mint)
        let fresh = token(at: time)
        policy.installed(fresh, mintedLocally: true, now: time)
        return fresh
    }

    @Test func firstRequestMintsThenTheTokenIsReused() {
        var policy = ProviderTokenPolicy()
        let first = mint(&policy, at: start)
        for minute in [0.0, 1, 19, 20, 49] {
            #expect(policy.decide(now: start + minute * 60) == .present(first))
        }
    }

    @Test func refreshesAtFiftyMinutes() {
        var policy = ProviderTokenPolicy()
        _ = mint(&policy, at: start)
        let second = mint(&policy, at: start + 50 * 60)
        #expect(policy.decide(now: start + 51 * 60) == .present(second))
    }

    @Test func concurrentCallersWaitOrKeepTheOldTokenWhileOneMints() {
        var policy = ProviderTokenPolicy()
        #expect(policy.decide(now: start) == .mint)
        #expect(policy.decide(now: start) == .wait)  // nothing to present yet
        let first = token(at: start)
        policy.installed(first, mintedLocally: true, now: start)
        #expect(policy.decide(now: start + 55 * 60) == .mint)
        #expect(policy.decide(now: start + 55 * 60) == .present(first))  // still under an hour
        #expect(policy.decide(now: start + 61 * 60) == .wait)  // too old to present
        policy.mintFailed()
        #expect(policy.decide(now: start + 61 * 60) == .mint)
    }

    @Test func expiredProviderTokenRefreshesOnceWhenTwentyMinutesOld() {
        var policy = ProviderTokenPolicy()
        let first = mint(&policy, at: start)
        let now = start + 25 * 60
        #expect(policy.rejectedAsExpired(first, now: now) == .refresh)
        #expect(policy.rejectedAsExpired(first, now: now) == .alreadyReplaced)
        let second = mint(&policy, at: now)
        #expect(policy.decide(now: now + 1) == .present(second))
        // The fresh token is refused too: our clock is wrong, refreshing again would not help.
        #expect(policy.rejectedAsExpired(second, now: now + 60) == .clockProblem)
        #expect(policy.decide(now: now + 61) == .present(second))
        // A late answer for the first token changes nothing.
        #expect(policy.rejectedAsExpired(first, now: now + 62) == .alreadyReplaced)
    }

    @Test func expiredProviderTokenOnAYoungTokenIsAClockProblem() {
        var policy = ProviderTokenPolicy()
        let first = mint(&policy, at: start)
        #expect(policy.rejectedAsExpired(first, now: start + 19 * 60) == .clockProblem)
        #expect(policy.decide(now: start + 19 * 60) == .present(first))
    }

    @Test func neverMintsMoreOftenThanEveryTwentyMinutes() {
        var policy = ProviderTokenPolicy()
        _ = mint(&policy, at: start)
        // Someone hands in an old token from the store (adopted, not minted here); we minted at `start`.
        let stale = token(at: start - 58 * 60)
        policy.installed(stale, mintedLocally: false, now: start + 60)
        #expect(policy.decide(now: start + 5 * 60) == .unavailable(until: start + 20 * 60))
        #expect(policy.decide(now: start + 20 * 60) == .mint)
    }

    @Test func tooManyProviderTokenUpdatesStopsMintingForTheCooldown() {
        var policy = ProviderTokenPolicy()
        let first = mint(&policy, at: start)
        policy.rejectedAsTooManyUpdates(now: start + 50 * 60)
        // Still presentable: keep it until it is an hour old.
        #expect(policy.decide(now: start + 55 * 60) == .present(first))
        #expect(policy.decide(now: start + 61 * 60) == .unavailable(until: start + 70 * 60))
        #expect(policy.decide(now: start + 70 * 60) == .mint)
    }
}
