/// The title and body of an ordinary notification sent instead of a Live Activity update (contract §9:
/// a device with Live Activities off, or following the visit with no activity, still learns of the
/// change). Always with the default sound.
public struct FallbackAlert: Sendable, Hashable {
    /// The notification's title.
    public var title: String
    /// The notification's body.
    public var body: String

    /// A fallback alert.
    public init(title: String, body: String) {
        self.title = title
        self.body = body
    }
}

extension FallbackAlert {
    /// The notification's body exactly as contract §9 gives it:
    /// `{"aps":{"alert":{"title","body"},"sound":"default","thread-id":"visit-<id>"},"visitId","status"}`.
    public func body(visitId: String, status: VisitStatus) -> [UInt8] {
        let aps = JSONValue.object([
            JSONMember("alert", .object([JSONMember("title", .string(title)), JSONMember("body", .string(body))])),
            JSONMember("sound", .string("default")),
            JSONMember("thread-id", .string("visit-\(visitId)")),
        ])
        return JSONValue.object([
            JSONMember("aps", aps), JSONMember("visitId", .string(visitId)), JSONMember("status", .string(status.rawValue)),
        ]).serialized()
    }
}
