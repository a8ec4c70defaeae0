import APNs
import Outbox
import Testing

@testable import OutboxAPNs

/// The adapter between the outbox's port and the APNs client: what the worker's judgement rests on.
@Suite(.timeLimit(.minutes(1))) struct APNsPushSenderTests {
    static func failure(
        _ cause: APNsFailure.Cause = .rejected, status: Int?, reason: String?, timestamp: Int64? = nil
    ) -> APNsResult {
        let apnsReason = reason.map(APNsReason.init(rawValue:))
        return .failure(
            APNsFailure(
                cause: cause, status: status, reason: apnsReason, timestamp: timestamp,
                apnsId: "00000000-0000-0000-0000-000000000001",
                latency: 0.25,
                classification: status.map { APNsFailureClass.classify(status: $0, reason: apnsReason) } ?? .retryable))
    }

    @Test func aPushBecomesALiveActivityRequestWithItsHeaders() {
        let push = OutgoingPush(
            deviceToken: "abcd", environment: .production, priority: .low, expiration: 1_700_000_000,
            apnsId: "00000000-0000-0000-0000-000000000002", body: Array("{}".utf8))
        let request = APNsPushSender.request(push)
        #expect(request.deviceToken == "abcd")
        #expect(request.environment == .production)
        #expect(request.pushType == .liveactivity)
        #expect(request.priority == .low)
        #expect(request.expiration == 1_700_000_000)
        #expect(request.apnsId == push.apnsId)
        #expect(request.body == push.body)
        #expect(
            APNsPushSender.request(
                OutgoingPush(
                    deviceToken: "abcd", environment: .sandbox, priority: .immediate, expiration: 0, apnsId: push.apnsId, body: []
                )
            ).priority
                == .immediate)
    }

    @Test func deadTokensCarryTheirRetirementReasonAndA410ItsTimestamp() {
        let gone = APNsPushSender.outcome(Self.failure(status: 410, reason: "Unregistered", timestamp: 1234)).failure
        #expect(gone?.classification == .tokenDead(.unregistered))
        #expect(gone?.tokenInvalidSinceMs == 1234)
        #expect(gone?.status == 410)
        #expect(gone?.reason == "Unregistered")
        #expect(gone?.outcomeUnknown == false)
        let bad = APNsPushSender.outcome(Self.failure(status: 400, reason: "BadDeviceToken", timestamp: 99)).failure
        #expect(bad?.classification == .tokenDead(.badDeviceToken))
        #expect(bad?.tokenInvalidSinceMs == nil)  // only a 410's timestamp dates a token's end
        #expect(
            APNsPushSender.outcome(Self.failure(status: 400, reason: "DeviceTokenNotForTopic")).failure?.classification
                == .tokenDead(.notForTopic))
    }

    @Test func classesAndUnknownOutcomesFollowTheClient() {
        #expect(
            APNsPushSender.outcome(Self.failure(status: 403, reason: "InvalidProviderToken")).failure?.classification
                == .configuration)
        #expect(
            APNsPushSender.outcome(Self.failure(status: 400, reason: "PayloadTooLarge")).failure?.classification == .permanent)
        let busy = APNsPushSender.outcome(Self.failure(status: 503, reason: "ServiceUnavailable")).failure
        #expect(busy?.classification == .retryable)
        #expect(busy?.outcomeUnknown == false)
        let timeout = APNsPushSender.outcome(Self.failure(.timedOut, status: nil, reason: nil)).failure
        #expect(timeout?.reason == "timeout")
        #expect(timeout?.outcomeUnknown == true)
        #expect(
            APNsPushSender.outcome(Self.failure(.connectionLost("GOAWAY"), status: nil, reason: nil)).failure?.outcomeUnknown
                == true)
        #expect(
            APNsPushSender.outcome(Self.failure(.connectionFailed("refused"), status: nil, reason: nil)).failure?.outcomeUnknown
                == false)
        #expect(APNsPushSender.outcome(.success(apnsId: "x", latency: 0.5)) == .accepted(latency: 0.5))
        let unique = "6c1a8f3e-2b4d-4e5f-9a7b-1c2d3e4f5a6b"
        #expect(
            APNsPushSender.outcome(.success(apnsId: "x", uniqueId: unique, latency: 0.5))
                == .accepted(latency: 0.5, uniqueId: unique))
    }
}
