/// The `aps.alert` of a push.
public struct AlertContent: Sendable, Hashable {
    /// The alert's title.
    public var title: String
    /// The alert's body.
    public var body: String
    /// The sound name (`"default"`), `nil` for a silent alert.
    public var sound: String?

    /// An alert.
    public init(title: String, body: String, sound: String? = nil) {
        self.title = title
        self.body = body
        self.sound = sound
    }

    /// `{"title","body"[,"sound"]}`.
    public var json: JSONValue {
        var members = [JSONMember("title", .string(title)), JSONMember("body", .string(body))]
        if let sound { members.append(JSONMember("sound", .string(sound))) }
        return .object(members)
    }
}
