import Foundation
import HTTPAPI
import Postgres
import Runtime

/// `livevisits keys create --role ROLE [--subject ID]` (prints the key once) and `keys revoke KEY_ID`.
enum KeysCommand {
    static let menu = CommandMenu(
        command: "livevisits keys",
        entries: [
            .init("create", "--role ROLE [--subject ID]", "mint an API key; prints it once (only its hash is stored)"),
            .init("revoke", "KEY_ID", "revoke a key by the id 'keys create' printed"),
        ])

    static let createSyntax = CommandSyntax(
        command: "livevisits keys create",
        summary: "Mints an API key and prints it once; only its hash is stored.",
        options: [
            .value("--role", "ROLE", Role.allCases.map(\.rawValue).joined(separator: "|"), required: true),
            .value("--subject", "ID", "the technician or customer id the key acts for"),
        ])

    static let revokeSyntax = CommandSyntax(
        command: "livevisits keys revoke", summary: "Revokes a live key.", positionals: "KEY_ID", positionalCount: 1...1)

    static func run(_ arguments: [String]) async throws {
        let (action, rest) = try menu.select(arguments)
        switch action {
        case "create":
            let parsed = try createSyntax.parse(rest)
            guard let role = try parsed.choice("--role", among: Role.allCases.map(\.rawValue)).flatMap(Role.init(rawValue:))
            else {
                throw createSyntax.mistake("--role is required")
            }
            try await create(role: role, subject: parsed.value("--subject"))
        default:
            let parsed = try revokeSyntax.parse(rest)
            try await revoke(keyId: parsed.positionals[0])
        }
    }

    static func create(role: Role, subject: String?) async throws {
        let url = try Configuration().databaseURL()
        let minted: MintedKey
        do {
            minted = try await PostgresPool.withPool(PostgresConfiguration(url: url, size: 1)) { pool in
                try await pool.withConnection { connection in
                    try APIKeys.mint(role: role, subject: subject, createdBy: "cli", on: connection)
                }
            }
        } catch let error as APIKeys.KeyError {
            throw UsageError(error.message)
        }
        Console.line("key id: \(minted.keyId)")
        Console.line("role: \(minted.role.rawValue)" + (minted.subject.map { ", subject: \($0)" } ?? ""))
        Console.line("this key is shown once; store it now:")
        Console.line(minted.key)
    }

    static func revoke(keyId: String) async throws {
        let url = try Configuration().databaseURL()
        let revoked = try await PostgresPool.withPool(PostgresConfiguration(url: url, size: 1)) { pool in
            try await pool.withConnection { connection in
                try APIKeys.revoke(keyId: keyId, allowedRoles: Role.allCases, on: connection)
            }
        }
        guard revoked else { throw CommandFailure("no live key with id \(keyId)") }
        Console.line("revoked \(keyId)")
    }
}
