import Foundation
import HTTPAPI
import Postgres

/// `livevisits keys create --role ROLE [--subject ID]` (prints the key once) and `keys revoke KEY_ID`.
enum KeysCommand {
    static let usage = "usage: livevisits keys create --role dispatcher|technician|customer|ops [--subject ID] | keys revoke KEY_ID"

    static func run(_ arguments: [String]) async throws {
        guard let action = arguments.first else { throw UsageError(usage) }
        switch action {
        case "create":
            let (role, subject) = try parseCreate(Array(arguments.dropFirst()))
            try await create(role: role, subject: subject)
        case "revoke":
            guard arguments.count == 2 else { throw UsageError(usage) }
            try await revoke(keyId: arguments[1])
        default:
            throw UsageError(usage)
        }
    }

    static func parseCreate(_ arguments: [String]) throws -> (Role, String?) {
        var role: Role? = nil
        var subject: String? = nil
        var index = 0
        while index < arguments.count {
            let flag = arguments[index]
            guard index + 1 < arguments.count else { throw UsageError(usage) }
            let value = arguments[index + 1]
            switch flag {
            case "--role":
                guard let parsed = Role(rawValue: value) else { throw UsageError("unknown role '\(value)'; \(usage)") }
                role = parsed
            case "--subject":
                guard !value.isEmpty else { throw UsageError(usage) }
                subject = value
            default:
                throw UsageError(usage)
            }
            index += 2
        }
        guard let role else { throw UsageError(usage) }
        return (role, subject)
    }

    static func create(role: Role, subject: String?) async throws {
        let pool = PostgresPool(configuration: PostgresConfiguration(url: try Configuration().databaseURL(), size: 1))
        let minted: MintedKey
        do {
            minted = try await pool.withConnection { connection in
                try APIKeys.mint(role: role, subject: subject, createdBy: "cli", on: connection)
            }
        } catch let error as APIKeys.KeyError {
            await pool.close()
            throw UsageError(error.message)
        }
        await pool.close()
        Console.line("key id: \(minted.keyId)")
        Console.line("role: \(minted.role.rawValue)" + (minted.subject.map { ", subject: \($0)" } ?? ""))
        Console.line("this key is shown once; store it now:")
        Console.line(minted.key)
    }

    static func revoke(keyId: String) async throws {
        let pool = PostgresPool(configuration: PostgresConfiguration(url: try Configuration().databaseURL(), size: 1))
        let revoked = try await pool.withConnection { connection in
            try APIKeys.revoke(keyId: keyId, allowedRoles: Role.allCases, on: connection)
        }
        await pool.close()
        guard revoked else { throw CommandFailure("no live key with id \(keyId)") }
        Console.line("revoked \(keyId)")
    }
}
