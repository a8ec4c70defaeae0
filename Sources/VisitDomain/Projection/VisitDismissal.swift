/// The `dismissal` of a visit view: how (and when) an ended activity leaves the screen.
public enum VisitDismissal: Sendable, Hashable {
    /// `{"policy": "immediate"}`.
    case immediate
    /// `{"policy": "default"}`.
    case `default`
    /// `{"policy": "after", "date": <epoch>}`.
    case after(date: Int)

    /// Its `policy` name.
    public var policy: String {
        switch self {
        case .immediate: "immediate"
        case .default: "default"
        case .after: "after"
        }
    }

    /// Its `date` (`after` only).
    public var date: Int? {
        if case .after(let date) = self { date } else { nil }
    }

    /// From its `policy` name and `date` (nil for an unknown name, or `after` without a date).
    public init?(policy: String, date: Int?) {
        switch (policy, date) {
        case ("immediate", _): self = .immediate
        case ("default", _): self = .default
        case ("after", let date?): self = .after(date: date)
        default: return nil
        }
    }

    /// The contract's JSON form.
    public var json: JSONValue {
        switch self {
        case .immediate, .default: .object([JSONMember("policy", .string(policy))])
        case .after(let date):
            .object([JSONMember("policy", .string(policy)), JSONMember("date", .number(Double(date)))])
        }
    }
}
