import CMicroHTTPD
import Foundation
import Testing

@testable import HTTPServer

/// The one log line per request: what it holds and what it never holds.
@Suite(.timeLimit(.minutes(2))) struct RequestLogTests {
    private func context(method: String = "POST") -> RequestContext {
        RequestContext(
            serial: 1, connection: OpaquePointer(bitPattern: 0x10)!, method: method,
            rawPath: "/v1/visits/secret-customer/events", version: "HTTP/1.1", requestID: "abc123",
            tracker: InstanceCounter())
    }

    @Test func fieldsOfAnAnsweredRequest() {
        let request = context()
        request.status = 201
        request.route = "/v1/visits/{id}/events"
        request.logMetadata = ["actor.role": "dispatcher", "http.status": "999"]
        let fields = HTTPServer.logFields(request, seconds: 0.0123456, termination: .REQUEST_TERMINATED_COMPLETED_OK)
        #expect(
            fields == [
                "http.method": "POST", "http.route": "/v1/visits/{id}/events", "http.status": "201",
                "http.duration_ms": "12.346", "http.request_id": "abc123", "actor.role": "dispatcher",
            ])
        #expect(!fields.values.contains { $0.contains("secret-customer") })
    }

    @Test func fieldsOfAnAbortedUnroutedRequest() {
        let fields = HTTPServer.logFields(
            context(method: "BREW"), seconds: 0.5, termination: .REQUEST_TERMINATED_CLIENT_ABORT)
        #expect(fields["http.method"] == "other")
        #expect(fields["http.route"] == "unmatched")
        #expect(fields["http.status"] == "none")
        #expect(fields["http.outcome"] == "client_abort")
        #expect(fields["http.duration_ms"] == "500.000")
    }

    @Test func millisecondsAreFormattedWithoutFoundation() {
        #expect(HTTPServer.milliseconds(0) == "0.000")
        #expect(HTTPServer.milliseconds(0.000_001) == "0.001")
        #expect(HTTPServer.milliseconds(1.5) == "1500.000")
        #expect(HTTPServer.milliseconds(0.0405) == "40.500")
    }
}
