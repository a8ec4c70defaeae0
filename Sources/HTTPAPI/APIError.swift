import APIStores
import CustomerErasure
import HTTPServer
import LiveActivityLedger
import Outbox
import PersonalData
import VisitCommands
import VisitDomain

/// An error the API answers with: a typed code (which carries its HTTP status), a message (never a secret).
public struct APIError: Error, HTTPErrorConvertible, Sendable, CustomStringConvertible {
    /// The stable code of `{"error":{"code":…}}`; compare with the static members. The domain's refusals keep
    /// their own codes (`input`, `decision`).
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        private enum Kind: Sendable, Hashable {
            case unauthorized, forbidden, notFound, malformedRequest, invalidValue, versionConflict
            case idempotencyKeyInUse, idempotencyKeyReused, notRetryable, unavailable
            case visitEnded, channelsExhausted, apnsUnavailable
            case customerHasActiveVisits, personalDataUnreadable
            case tooManyActivities, tooManyDevices
            case input(VisitInputError.Code)
            case decision(VisitDecisionError.Code)
        }
        private let kind: Kind

        /// No key, or not a live one. 401.
        public static let unauthorized = Code(kind: .unauthorized)
        /// The caller's role may not do this. 403.
        public static let forbidden = Code(kind: .forbidden)
        /// Unknown, or not the caller's. 404.
        public static let notFound = Code(kind: .notFound)
        /// A header, path or query the API cannot read (a malformed Idempotency-Key, a foreign cursor). 400.
        public static let malformedRequest = Code(kind: .malformedRequest)
        /// Valid JSON or query that breaks a rule. 422.
        public static let invalidValue = Code(kind: .invalidValue)
        /// `If-Match` or a lost race: the visit is at another version. 409.
        public static let versionConflict = Code(kind: .versionConflict)
        /// The first request with this Idempotency-Key has no answer yet. 409.
        public static let idempotencyKeyInUse = Code(kind: .idempotencyKeyInUse)
        /// The Idempotency-Key was used with another body. 409.
        public static let idempotencyKeyReused = Code(kind: .idempotencyKeyReused)
        /// An outbox delivery that cannot be retried. 409.
        public static let notRetryable = Code(kind: .notRetryable)
        /// The database is unreachable. 503.
        public static let unavailable = Code(kind: .unavailable)
        /// The visit has ended: no channel for it (contract §7). 409.
        public static let visitEnded = Code(kind: .visitEnded)
        /// The fleet holds `LIVEVISITS_MAX_CHANNELS` channels, or APNs creates no more (contract §7). 409.
        public static let channelsExhausted = Code(kind: .channelsExhausted)
        /// APNs did not answer a channel creation usably (or sending is not configured); nothing stored. 503.
        public static let apnsUnavailable = Code(kind: .apnsUnavailable)
        /// `DELETE /v1/customers/{id}` while a visit of theirs has not ended. HTTP 409.
        public static let customerHasActiveVisits = Code(kind: .customerHasActiveVisits)
        /// A write needs a customer's data key that this process cannot open (wrapped under a key file it
        /// lacks, or a changed row): that request alone. HTTP 500. (Reads answer such fields `null`.)
        public static let personalDataUnreadable = Code(kind: .personalDataUnreadable)
        /// The visit holds `TokenRegistry.maximumLiveActivitiesPerVisit` live activities (contract §15). 409.
        public static let tooManyActivities = Code(kind: .tooManyActivities)
        /// The customer has `TokenRegistry.maximumDevicesPerCustomer` devices with a live token
        /// (contract §15). 409.
        public static let tooManyDevices = Code(kind: .tooManyDevices)
        /// A body the domain refuses (400 for malformed JSON, else 422).
        public static func input(_ code: VisitInputError.Code) -> Code { Code(kind: .input(code)) }
        /// An event the state machine refuses (409, or 404 for a visit that does not exist).
        public static func decision(_ code: VisitDecisionError.Code) -> Code { Code(kind: .decision(code)) }

        /// The snake_case text of the code.
        public var rawValue: String {
            switch kind {
            case .unauthorized: "unauthorized"
            case .forbidden: "forbidden"
            case .notFound: "not_found"
            case .malformedRequest: "malformed_request"
            case .invalidValue: "invalid_value"
            case .versionConflict: "version_conflict"
            case .idempotencyKeyInUse: "idempotency_key_in_use"
            case .idempotencyKeyReused: "idempotency_key_reused"
            case .notRetryable: "not_retryable"
            case .unavailable: "unavailable"
            case .visitEnded: "visit_ended"
            case .channelsExhausted: "channels_exhausted"
            case .apnsUnavailable: "apns_unavailable"
            case .customerHasActiveVisits: "customer_has_active_visits"
            case .personalDataUnreadable: "personal_data_unreadable"
            case .tooManyActivities: "too_many_activities"
            case .tooManyDevices: "too_many_devices"
            case .input(let code): code.rawValue
            case .decision(let code): code.rawValue
            }
        }

        /// The HTTP status the contract gives this code.
        public var httpStatus: Int {
            switch kind {
            case .unauthorized: 401
            case .forbidden: 403
            case .notFound: 404
            case .malformedRequest: 400
            case .invalidValue: 422
            case .versionConflict, .idempotencyKeyInUse, .idempotencyKeyReused, .notRetryable, .visitEnded,
                .channelsExhausted:
                409
            case .unavailable, .apnsUnavailable: 503
            case .customerHasActiveVisits, .tooManyActivities, .tooManyDevices: 409
            case .personalDataUnreadable: 500
            case .input(let code): code.httpStatus
            case .decision(let code): code.httpStatus
            }
        }

        public var description: String { rawValue }
    }

    public let code: Code
    public let message: String
    /// The body's field at fault, answered as `"field"` (`invalid_id` names it, contract §15).
    public let field: String?
    /// What the API was refusing, when it was another error.
    public let underlying: (any Error)?

    public init(_ code: Code, _ message: String, field: String? = nil, underlying: (any Error)? = nil) {
        self.code = code
        self.message = message
        self.field = field
        self.underlying = underlying
    }

    public var httpStatus: Int { code.httpStatus }
    public var httpCode: String { code.rawValue }
    public var httpMessage: String { message }
    public var httpField: String? { field }
    public var description: String { "\(httpStatus) \(httpCode): \(httpMessage)" }

    static let unauthorized = APIError(.unauthorized, "a valid API key is required: Authorization: Bearer <key>")
    static func forbidden(_ message: String) -> APIError { APIError(.forbidden, message) }
    static func notFound(_ what: String) -> APIError { APIError(.notFound, "\(what) not found") }
    static func malformed(_ message: String) -> APIError { APIError(.malformedRequest, message) }
    static let unavailable = APIError(.unavailable, "the database is unreachable; retry later")

    /// Maps anything a handler may throw to its answer; nil for errors that are the server's own fault.
    static func map(_ error: any Error) -> APIError? {
        switch error {
        case let e as APIError: return e
        case let e as VisitInputError: return APIError.input(e)
        case let e as VisitDecisionError: return APIError(.decision(e.code), e.message, underlying: e)
        case let e as VersionMismatch: return APIError(.versionConflict, e.description, underlying: e)
        case is DeviceRegistrations.VisitNotFound: return .notFound("visit")
        case is DeviceRegistrations.ActivityNotFound: return .notFound("live activity")
        case let e as OutboxError: return APIError.fromOutbox(e)
        case let e as LedgerError:
            switch e.code {
            case .tooManyActivities: return APIError(.tooManyActivities, e.message, underlying: e)
            case .tooManyDevices: return APIError(.tooManyDevices, e.message, underlying: e)
            case .invalidToken: return APIError(.invalidValue, "pushToken: \(e.message)", underlying: e)
            default: return nil
            }
        case let e as CustomerErasure.Refusal:
            switch e.code {
            case .activeVisits: return APIError(.customerHasActiveVisits, e.message, underlying: e)
            default: return APIError(.notFound, e.message, underlying: e)
            }
        // A write that must seal under a customer's data key this process cannot open (a booking for an
        // existing customer): that request alone fails; the message names the key, never the data.
        case let e as PersonalDataError: return APIError(.personalDataUnreadable, e.message, underlying: e)
        case let e as ChannelStore.Refusal:
            switch e.code {
            case .exhausted: return APIError(.channelsExhausted, e.message, underlying: e)
            case .unavailable: return APIError(.apnsUnavailable, e.message, underlying: e)
            }
        default:
            guard let failure = StorageFailure(error) else { return nil }
            switch failure.kind {
            case .unavailable: return .unavailable
            case .versionConflict: return APIError(.versionConflict, failure.message, underlying: error)
            case .invalidEvent: return APIError(.invalidValue, failure.message, underlying: error)
            }
        }
    }

    /// A body the domain refuses; an id outside the grammar and a malformed locale name their field.
    static func input(_ error: VisitInputError) -> APIError {
        let namesField = error.code == .invalidId || error.code == .invalidLocale
        return APIError(.input(error.code), error.message, field: namesField ? error.field : nil, underlying: error)
    }

    static func fromOutbox(_ error: OutboxError) -> APIError? {
        switch error.code {
        case .notFound: APIError(.notFound, error.message, underlying: error)
        case .notRetryable: APIError(.notRetryable, error.message, underlying: error)
        default: nil
        }
    }
}
