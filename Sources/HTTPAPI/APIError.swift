import EventStore
import HTTPServer
import Outbox
import Postgres
import VisitCommands
import VisitDomain

/// An error the API answers with: status, stable code, message (never a secret).
public struct APIError: Error, HTTPErrorConvertible, Sendable, CustomStringConvertible {
    public let httpStatus: Int
    public let httpCode: String
    public let httpMessage: String

    public init(_ status: Int, _ code: String, _ message: String) {
        httpStatus = status
        httpCode = code
        httpMessage = message
    }

    public var description: String { "\(httpStatus) \(httpCode): \(httpMessage)" }

    static let unauthorized = APIError(401, "unauthorized", "a valid API key is required: Authorization: Bearer <key>")
    static func forbidden(_ message: String) -> APIError { APIError(403, "forbidden", message) }
    static func notFound(_ what: String) -> APIError { APIError(404, "not_found", "\(what) not found") }
    static func malformed(_ message: String) -> APIError { APIError(400, "malformed_request", message) }
    static let unavailable = APIError(503, "unavailable", "the database is unreachable; retry later")

    /// Maps anything a handler may throw to its answer; nil for errors that are the server's own fault.
    static func map(_ error: any Error) -> APIError? {
        switch error {
        case let e as APIError: return e
        case let e as VisitInputError: return APIError(e.code.httpStatus, e.code.rawValue, e.message)
        case let e as VisitDecisionError: return APIError(e.code.httpStatus, e.code.rawValue, e.message)
        case let e as VersionMismatch: return APIError(409, "version_conflict", e.description)
        case let e as EventStoreError:
            switch e.code {
            case .unavailable: return .unavailable
            case .wrongExpectedVersion: return APIError(409, "version_conflict", e.message)
            case .eventTooLarge, .invalidStreamName, .invalidEventType, .invalidEventData:
                return APIError(422, "invalid_value", e.message)
            default: return nil
            }
        case let e as PostgresError where e.isUnavailable: return .unavailable
        case let e as OutboxError: return APIError.fromOutbox(e)
        default: return nil
        }
    }

    static func fromOutbox(_ error: OutboxError) -> APIError? {
        switch error.code {
        case .invalidToken: APIError(422, "invalid_value", "pushToken: \(error.message)")
        case .notFound: APIError(404, "not_found", error.message)
        case .notRetryable: APIError(409, "not_retryable", error.message)
        default: nil
        }
    }
}
