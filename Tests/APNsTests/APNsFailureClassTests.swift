import Testing

@testable import APNs

@Suite(.timeLimit(.minutes(2))) struct APNsFailureClassTests {
    @Test(arguments: [
        (429, "TooManyRequests", APNsFailureClass.retryable), (500, "InternalServerError", .retryable),
        (503, "ServiceUnavailable", .retryable), (503, "Shutdown", .retryable), (502, "", .retryable),
        (403, "ExpiredProviderToken", .retryable), (429, "TooManyProviderTokenUpdates", .retryable),
        (410, "Unregistered", .tokenDead), (410, "ExpiredToken", .tokenDead), (400, "BadDeviceToken", .tokenDead),
        (400, "DeviceTokenNotForTopic", .tokenDead),
        (403, "InvalidProviderToken", .configuration), (403, "MissingProviderToken", .configuration),
        (403, "UnrelatedKeyIdInToken", .configuration), (400, "BadTopic", .configuration),
        (400, "TopicDisallowed", .configuration), (403, "BadCertificate", .configuration),
        (403, "BadCertificateEnvironment", .configuration), (403, "SomethingNew", .configuration),
        (400, "BadPriority", .permanent), (413, "PayloadTooLarge", .permanent), (400, "BadExpirationDate", .permanent),
        (405, "MethodNotAllowed", .permanent), (404, "BadPath", .permanent), (400, "SomethingNew", .permanent),
    ])
    func classifiesAppleAnswers(status: Int, reason: String, expected: APNsFailureClass) {
        let parsed = reason.isEmpty ? nil : APNsReason(rawValue: reason)
        #expect(APNsFailureClass.classify(status: status, reason: parsed) == expected)
    }

    @Test func reasonsRoundTripAndUnknownOnesAreKept() {
        #expect(APNsReason(rawValue: "BadDeviceToken") == .badDeviceToken)
        #expect(APNsReason.unregistered.rawValue == "Unregistered")
        #expect(APNsReason(rawValue: "NewReason2027") == .unknown("NewReason2027"))
        #expect(APNsReason(rawValue: "NewReason2027").rawValue == "NewReason2027")
    }

    @Test func parsesErrorBodies() {
        let (reason, timestamp) = APNsClient.parseErrorBody(Array(#"{"reason":"Unregistered","timestamp":1790000000123}"#.utf8))
        #expect(reason == .unregistered)
        #expect(timestamp == 1_790_000_000_123)
        let (none, noTime) = APNsClient.parseErrorBody(Array("not json".utf8))
        #expect(none == nil && noTime == nil)
    }

    @Test(arguments: [
        (HTTP2Exchange.Failure.Kind.timedOut, APNsFailureClass.retryable), (.connectFailed, .retryable),
        (.connectionLost, .retryable), (.untrustedServer, .configuration),
    ])
    func classifiesTransportErrors(kind: HTTP2Exchange.Failure.Kind, expected: APNsFailureClass) {
        #expect(APNsClient.classifyTransportError(.init(kind: kind, message: "m")).1 == expected)
    }

    @Test func requestsAreCheckedAndNeverPrintTheirToken() {
        let token = String(repeating: "ab", count: 32)
        var request = APNsRequest(
            deviceToken: token, environment: .sandbox, priority: .immediate, expiration: 0,
            apnsId: "6f1c7a52-7f3b-4c8e-9e43-0a1b2c3d4e5f", body: Array("{}".utf8))
        #expect(request.invalidity == nil)
        #expect(!"\(request)".contains(token))
        request.deviceToken = "ab/../x"
        #expect(request.invalidity != nil)
        request.deviceToken = token
        request.apnsId = "not-a-uuid"
        #expect(request.invalidity != nil)
    }
}
