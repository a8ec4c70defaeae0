/// The projection of one visit, as `GET /v1/visits/{id}` answers it (contract §4).
public struct VisitView: Sendable, Hashable {
    /// The visit's id.
    public var visitId: String
    /// The customer's id.
    public var customerId: String
    /// The assigned technician's id (not in the JSON; for access checks and filters).
    public var technicianId: String
    /// The version of the last event.
    public var version: Int
    /// The current status.
    public var status: VisitStatus
    /// The static fields.
    public var attributes: ServiceVisitAttributes
    /// The current content state.
    public var contentState: ContentState
    /// The current relevance score.
    public var relevanceScore: Double
    /// When the content goes stale (`nil` once ended).
    public var staleDate: Int?
    /// `nil` while active.
    public var dismissal: VisitDismissal?
    /// The customer's language as booked; nil: booked without one (the JSON leaves it out).
    public var locale: LanguageTag?

    /// What the rules in force gave a state (its relevance, stale date and dismissal): the read model keeps
    /// them beside the folded state, so that a visit's view is drawn as the rules of its last event made it
    /// (a rule change applies to new events; a replay applies it to history).
    public struct Ruled: Sendable, Hashable {
        public var relevanceScore: Double
        public var staleDate: Int?
        public var dismissal: VisitDismissal?

        public init(relevanceScore: Double, staleDate: Int?, dismissal: VisitDismissal?) {
            self.relevanceScore = relevanceScore
            self.staleDate = staleDate
            self.dismissal = dismissal
        }

        /// Through the rules in force.
        public init(state: VisitState, rules: ProjectionRules) {
            self.init(
                relevanceScore: state.relevanceScore(rules), staleDate: state.staleDate(rules), dismissal: state.dismissal(rules))
        }
    }

    /// Projects a state through the rules in force.
    public init(state: VisitState, rules: ProjectionRules) {
        self.init(state: state, ruled: Ruled(state: state, rules: rules))
    }

    /// Projects a state with what the rules gave it.
    public init(state: VisitState, ruled: Ruled) {
        visitId = state.visitId
        customerId = state.customerId
        technicianId = state.technician.id
        version = state.version
        status = state.status
        attributes = state.attributes
        contentState = state.contentState
        relevanceScore = ruled.relevanceScore
        staleDate = ruled.staleDate
        dismissal = ruled.dismissal
        locale = state.locale
    }

    /// The contract's JSON, keys in its order; `liveActivities` (live tokens) is the caller's.
    public func json(liveActivities: Int) -> JSONValue {
        var members: [JSONMember] = [
            JSONMember("visitId", .string(visitId)),
            JSONMember("customerId", .string(customerId)),
            JSONMember("version", .number(Double(version))),
            JSONMember("status", .string(status.rawValue)),
            JSONMember("attributes", attributes.visitViewJSON),
            JSONMember("contentState", contentState.json),
            JSONMember("relevanceScore", .number(relevanceScore)),
            JSONMember("staleDate", staleDate.map { .number(Double($0)) } ?? .null),
            JSONMember("dismissal", dismissal?.json ?? .null),
        ]
        if let locale { members.append(JSONMember("locale", .string(locale.text))) }
        members.append(JSONMember("liveActivities", .number(Double(liveActivities))))
        return .object(members)
    }
}
