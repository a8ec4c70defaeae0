/// What a matched route gives its handler: the template and the values of its `{name}` parameters.
public struct RouteParameters: Sendable {
    /// The matched template, for example `/v1/visits/{id}/events`.
    public let template: String
    /// Parameter values by name, percent-decoded.
    public let values: [String: String]

    /// Parameters as the router found them (tests may build their own).
    public init(template: String, values: [String: String]) {
        self.template = template
        self.values = values
    }

    /// The value of the parameter `name`, or nil when the template has no such parameter.
    public subscript(name: String) -> String? { values[name] }
}
