/// The static part of the Live Activity: the seed's three fields plus `visitId`
/// (contract §5: the field that identifies an activity started by push).
public struct ServiceVisitAttributes: Sendable, Hashable {
    /// The visit the activity follows.
    public var visitId: String
    /// The customer's first name.
    public var customerFirstName: String
    /// Where the work happens.
    public var serviceAddress: String
    /// What the work is.
    public var jobSummary: String

    /// The attributes of one visit.
    public init(visitId: String, customerFirstName: String, serviceAddress: String, jobSummary: String) {
        self.visitId = visitId
        self.customerFirstName = customerFirstName
        self.serviceAddress = serviceAddress
        self.jobSummary = jobSummary
    }

    /// `{"customerFirstName","serviceAddress","jobSummary"}`, as `GET /v1/visits/{id}` shows them.
    public var visitViewJSON: JSONValue {
        .object([
            JSONMember("customerFirstName", .string(customerFirstName)),
            JSONMember("serviceAddress", .string(serviceAddress)),
            JSONMember("jobSummary", .string(jobSummary)),
        ])
    }

    /// The `aps.attributes` of a start: the three seed fields and `visitId`.
    public var apsJSON: JSONValue {
        .object([
            JSONMember("customerFirstName", .string(customerFirstName)),
            JSONMember("serviceAddress", .string(serviceAddress)),
            JSONMember("jobSummary", .string(jobSummary)),
            JSONMember("visitId", .string(visitId)),
        ])
    }
}
