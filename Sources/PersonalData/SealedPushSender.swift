import Outbox
import Postgres

/// The seam between the outbox and personal data: a start push carries the visit's attributes, and its body
/// at rest (`deliveries.body`) holds them sealed like everywhere else. Just before the send, this sender
/// opens them and hands the plain body to the real sender; the plain text lives for that call only.
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
        guard PersonalDataOpener.mayHoldSealed(push.body) else { return await inner.send(push) }
        let opened: PersonalDataOpener.Opened
        do {
            opened = try await opener.open(push.body, pool: pool)
        } catch is PersonalDataError {
            return .failed(PushFailure(classification: .permanent, reason: "personal_data_unreadable", latency: 0))
        } catch {
            return .failed(PushFailure(classification: .retryable, reason: "personal_data_lookup", latency: 0))
        }
        if opened.erasedFields > 0 {
            return .failed(PushFailure(classification: .permanent, reason: "customer_erased", latency: 0))
        }
        var plain = push
        plain.body = opened.bytes
        return await inner.send(plain)
    }
}
