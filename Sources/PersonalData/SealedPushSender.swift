import Outbox
import Postgres

/// The seam between the outbox and personal data: a start push carries the visit's attributes, and its body
/// at rest (`deliveries.body`) holds them sealed like everywhere else; the device token a push goes to is
/// stored sealed too (`SealedPushTokens`). Just before the send, this sender opens both and hands the plain
/// push to the real sender; the plain text lives for that call only (the token is never logged).
///
/// A body whose customer's key is gone (erased after it was queued) is not sent: it fails permanently
/// (`customer_erased`) and the outbox dead-letters it. (Erasure also cancels what is still pending.)
/// A body that fails authentication fails permanently too (`personal_data_unreadable`).
public struct SealedPushSender: PushSender {
    public let inner: any PushSender
    public let opener: PersonalDataOpener
    public let pool: PostgresPool

    /// - Parameter cache: the process's data keys recently read (used while its listener runs); nil: every
    ///   send reads its key.
    public init(inner: any PushSender, keys: PersonalDataKeys, pool: PostgresPool, cache: PersonalDataKeyCache? = nil) {
        self.inner = inner
        self.opener = PersonalDataOpener(keys: keys, cache: cache)
        self.pool = pool
    }

    public func send(_ push: OutgoingPush) async -> PushOutcome {
        switch await opened(push, tokenKeys: await tokenKeys([push])) {
        case .success(let plain): await inner.send(plain)
        case .failure(let refused): refused.outcome
        }
    }

    /// Opens what needs opening, then hands every push that opened to the inner sender in one batch. The
    /// tokens' data keys not cached are read in one query for the batch, not one per push.
    public func sendAll(_ pushes: [OutgoingPush]) async -> [PushOutcome] {
        let keys = await tokenKeys(pushes)
        var outcomes = [PushOutcome?](repeating: nil, count: pushes.count)
        var plain: [OutgoingPush] = []
        var plainIndices: [Int] = []
        plain.reserveCapacity(pushes.count)
        plainIndices.reserveCapacity(pushes.count)
        for (index, push) in pushes.enumerated() {
            switch await opened(push, tokenKeys: keys) {
            case .success(let opened):
                plain.append(opened)
                plainIndices.append(index)
            case .failure(let refused):
                outcomes[index] = refused.outcome
            }
        }
        for (index, outcome) in zip(plainIndices, await inner.sendAll(plain)) { outcomes[index] = outcome }
        return outcomes.map { $0! }
    }

    /// Why a push was not handed on.
    private struct Refused: Error {
        let outcome: PushOutcome
        init(_ classification: PushFailure.Class, _ reason: String) {
            outcome = .failed(PushFailure(classification: classification, reason: reason, latency: 0))
        }
    }

    /// The data keys of the pushes' sealed tokens; nil when reading them failed.
    private func tokenKeys(_ pushes: [OutgoingPush]) async -> PersonalDataOpener.ValueKeys? {
        try? await opener.valueKeys(pushes.lazy.filter { $0.channelId == nil }.map(\.deviceToken), pool: pool)
    }

    /// The push with its token and body opened (unchanged when they hold nothing sealed), or the outcome that
    /// ends it.
    private func opened(_ push: OutgoingPush, tokenKeys: PersonalDataOpener.ValueKeys?) async -> Result<OutgoingPush, Refused> {
        var push = push
        if push.channelId == nil, push.deviceToken.hasPrefix(SealedText.prefix) {
            guard let tokenKeys else { return .failure(Refused(.retryable, "personal_data_lookup")) }
            switch PersonalDataOpener.openValue(push.deviceToken, with: tokenKeys) {
            case .plain(let token): push.deviceToken = token
            case .erased: return .failure(Refused(.permanent, "customer_erased"))
            case .unreadable: return .failure(Refused(.permanent, "personal_data_unreadable"))
            }
        }
        guard PersonalDataOpener.mayHoldSealed(push.body) else { return .success(push) }
        let opened: PersonalDataOpener.Opened
        do {
            opened = try await opener.open(push.body, pool: pool)
        } catch {
            return .failure(Refused(.retryable, "personal_data_lookup"))
        }
        // A start never goes out with fields the customer did not give: unreadable ones stop it as erasure does.
        if opened.unreadableFields > 0 { return .failure(Refused(.permanent, "personal_data_unreadable")) }
        if opened.erasedFields > 0 { return .failure(Refused(.permanent, "customer_erased")) }
        var plain = push
        plain.body = opened.bytes
        return .success(plain)
    }
}
