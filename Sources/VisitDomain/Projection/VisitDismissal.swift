/// The `dismissal` of a visit view: how (and when) an ended activity leaves the screen.
public enum VisitDismissal: Sendable, Hashable {
    /// `{"policy": "immediate"}`.
    case immediate
    /// `{"policy": "default"}`.
    case `default`
    /// `{"policy": "after", "date": <epoch>}`.
    case after(date: Int)

    /// The contract's JSON form.
    public var json: JSONValue {
        switch self {
        case .immediate: .object([JSONMember("policy", .string("immediate"))])
        case .default: .object([JSONMember("policy", .string("default"))])
        case .after(let date):
            .object([JSONMember("policy", .string("after")), JSONMember("date", .number(Double(date)))])
        }
    }
}
