/// A path template such as `/v1/visits/{id}/events`: literal segments and `{name}` parameters,
/// each parameter matching exactly one non-empty, percent-decoded path segment.
public struct RouteTemplate: Sendable, Hashable, CustomStringConvertible {
    enum Segment: Sendable, Hashable {
        case literal(String)
        case parameter(String)
    }

    /// The template as written; this is the `route` label of logs and metrics.
    public let text: String
    let segments: [Segment]

    /// Parses a template; nil when it does not start with `/`, has an empty or unbalanced `{}`,
    /// or names a parameter twice.
    public init?(_ text: String) {
        guard text.hasPrefix("/") else { return nil }
        var segments: [Segment] = []
        var names = Set<String>()
        let body = text.dropFirst()
        if !body.isEmpty {
            for piece in body.split(separator: "/", omittingEmptySubsequences: false) {
                if piece.hasPrefix("{") && piece.hasSuffix("}") && piece.count > 2 {
                    let name = String(piece.dropFirst().dropLast())
                    guard !name.contains("{"), !name.contains("}"), names.insert(name).inserted else { return nil }
                    segments.append(.parameter(name))
                } else {
                    guard !piece.contains("{"), !piece.contains("}") else { return nil }
                    segments.append(.literal(String(piece)))
                }
            }
        }
        self.text = text
        self.segments = segments
    }

    /// The parameters when `path` (decoded segments) fits this template, else nil.
    func match(_ path: [String]) -> [String: String]? {
        guard path.count == segments.count else { return nil }
        var parameters: [String: String] = [:]
        for (segment, value) in zip(segments, path) {
            switch segment {
            case .literal(let literal):
                guard literal == value else { return nil }
            case .parameter(let name):
                guard !value.isEmpty else { return nil }
                parameters[name] = value
            }
        }
        return parameters
    }

    /// Whether this template is preferred over `other` when both fit a path: the first segment where
    /// they differ in kind decides, a literal beating a parameter (`/visits/search` over `/visits/{id}`).
    func isMoreSpecific(than other: RouteTemplate) -> Bool {
        for (mine, theirs) in zip(segments, other.segments) {
            switch (mine, theirs) {
            case (.literal, .parameter): return true
            case (.parameter, .literal): return false
            default: continue
            }
        }
        return false
    }

    public var description: String { text }
}
