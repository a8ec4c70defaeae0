import APIStores
import Foundation
import HTTPServer
import JSON
import VisitDomain

extension LiveVisitsAPI {
    func addKeyRoutes(to router: inout Router) {
        router.add(
            .post, "/v1/keys", through: authenticated,
            LiveVisitsAPI.withCaller { request, _, caller in
                try await mintKey(request, caller: caller)
            })
        router.add(
            .get, "/v1/keys", through: authenticated,
            LiveVisitsAPI.withCaller { request, _, caller in
                try await listKeys(request, caller: caller)
            })
        router.add(
            .delete, "/v1/keys/{keyId}", through: authenticated,
            LiveVisitsAPI.withCaller { _, params, caller in
                try await revokeKey(keyId: params["keyId"], caller: caller)
            })
    }

    func mintKey(_ request: HTTPRequest, caller: Caller) async throws -> HTTPResponse {
        guard caller.role == .dispatcher else { throw APIError.forbidden("only a dispatcher mints keys") }
        let body = try RequestBody(request)
        try body.allowOnly(["role", "subject", "name"])
        let roleText = try body.requiredString("role", maxBytes: 32)
        guard let role = Role(rawValue: roleText), role == .technician || role == .customer else {
            throw APIError(.invalidValue, "role: a dispatcher mints technician or customer keys")
        }
        let subject = try body.id("subject")
        let name = try body.text("name", maxBytes: APIKeys.nameBytes)
        let keys = environment.keys
        let minted = try await mapped {
            try await keys.mint(role: role, subject: subject, name: name, createdBy: caller.keyId)
        }
        let json =
            "{\"keyId\":\"\(minted.keyId)\",\"key\":\"\(minted.key)\",\"role\":\"\(minted.role.rawValue)\",\"subject\":"
            + "\(minted.subject.map { jsonString($0) } ?? "null"),\"name\":\(minted.name.map { jsonString($0) } ?? "null")}"
        return .json(status: 201, body: Data(json.utf8))
    }

    /// `GET /v1/keys` (ops): the keys for an audit, newest first — id, role, subject, who minted it, when it
    /// was made and revoked; never a key or its hash. `role` narrows it; `limit` 1 to 1000, default 1000.
    func listKeys(_ request: HTTPRequest, caller: Caller) async throws -> HTTPResponse {
        try LiveVisitsAPI.requireOps(caller)
        var role: Role? = nil
        if let text = request.queryValue("role") {
            guard let parsed = Role(rawValue: text) else {
                throw APIError(.invalidValue, "role: expected one of \(Role.allCases.map(\.rawValue).joined(separator: ", "))")
            }
            role = parsed
        }
        var limit = 1000
        if let text = request.queryValue("limit") {
            guard let n = Int(text), (1...1000).contains(n) else { throw APIError(.invalidValue, "limit: expected 1 to 1000") }
            limit = n
        }
        let keys = environment.keys
        let listed = try await mapped { try await keys.list(role: role, limit: limit) }
        let items: [JSONValue] = listed.map { key in
            .object([
                JSONMember("keyId", .string(key.keyId)), JSONMember("role", .string(key.role)),
                JSONMember("subject", key.subject.map(JSONValue.string) ?? .null),
                JSONMember("name", key.name.map(JSONValue.string) ?? .null),
                JSONMember("createdBy", key.createdBy.map(JSONValue.string) ?? .null),
                JSONMember("createdAt", .number(key.createdAt.rounded(.down))),
                JSONMember("revokedAt", key.revokedAt.map { .number($0.rounded(.down)) } ?? .null),
            ])
        }
        return .json(.object([JSONMember("keys", .array(items))]))
    }

    func revokeKey(keyId: String?, caller: Caller) async throws -> HTTPResponse {
        let allowed: [Role]
        switch caller.role {
        case .ops: allowed = Role.allCases
        case .dispatcher: allowed = [.technician, .customer]
        default: throw APIError.forbidden("only a dispatcher or an operator revokes keys")
        }
        guard let keyId, keyId.count <= 64 else { throw APIError.notFound("key") }
        let keys = environment.keys
        // The registry forgets the key in this process's cache at once; the others when the NOTIFY arrives.
        guard try await mapped({ try await keys.revoke(keyId: keyId, allowedRoles: allowed) }) else {
            throw APIError.notFound("key")
        }
        return HTTPResponse(status: 204)
    }
}

/// A JSON string literal for `text` (the domain's writer does the escaping).
func jsonString(_ text: String) -> String {
    JSONValue.string(text).serializedString()
}
