import APIStores
import Foundation
import PersonalData
import Postgres
import Runtime

/// `livevisits keys create --role ROLE [--subject ID] [--name NAME]` (prints the key once), `keys revoke KEY_ID`, `keys list`
/// (the audit) and `keys rotate-personal-data`.
enum KeysCommand {
    static let menu = CommandMenu(
        command: "livevisits keys",
        entries: [
            .init(
                "create", "--role ROLE [--subject ID] [--name NAME]", "mint an API key; prints it once (only its hash is stored)"),
            .init("revoke", "KEY_ID", "revoke a key by the id 'keys create' printed"),
            .init("list", "[--role ROLE] [--limit N]", "every key, newest first, for an audit (never a key or its hash)"),
            .init(
                "rotate-personal-data", "[--new-key-file PATH] [--forget-previous]",
                "rewrap every customer's data key under a new key file, online"),
        ])

    static let rotateSyntax = CommandSyntax(
        command: "livevisits keys rotate-personal-data",
        summary:
            "Rewraps every customer's data key under a new key file, in batches, while the fleet keeps serving (the old wrap stays readable until every process switched).",
        options: [
            .value(
                "--new-key-file", "PATH",
                "the new 32-byte key file (default: LIVEVISITS_PERSONAL_DATA_KEY_FILE, to catch keys made under the previous one)"
            ),
            .flag("--forget-previous", "drop the old wraps kept for processes that had not switched yet (run last)"),
        ],
        details:
            "Opens the keys with LIVEVISITS_PERSONAL_DATA_KEY_FILE and LIVEVISITS_PERSONAL_DATA_PREVIOUS_KEY_FILE. The switch, step by step: Docs/operations.md, \"Rotating the personal-data key\"."
    )

    static let createSyntax = CommandSyntax(
        command: "livevisits keys create",
        summary: "Mints an API key and prints it once; only its hash is stored.",
        options: [
            .value("--role", "ROLE", Role.allCases.map(\.rawValue).joined(separator: "|"), required: true),
            .value(
                "--subject", "ID", "the technician or customer id the key acts for (1-128 of A-Z a-z 0-9 . _ ~ -)"),
            .value(
                "--name", "NAME",
                "the display name of the person the key is for, shown with the events they post (at most \(APIKeys.nameBytes) bytes, no control characters)"
            ),
        ])

    static let listSyntax = CommandSyntax(
        command: "livevisits keys list",
        summary: "Lists the API keys, revoked ones too, newest first: one line each, never a key or its hash.",
        options: [
            .value("--role", "ROLE", Role.allCases.map(\.rawValue).joined(separator: "|")),
            .value("--limit", "N", "at most N lines (default: every key)"),
        ],
        details:
            "Columns, tab-separated: id, role, subject, name, created-by (the minting key's id, or cli), created, revoked (UTC; - when none)."
    )

    static let revokeSyntax = CommandSyntax(
        command: "livevisits keys revoke", summary: "Revokes a live key.", positionals: "KEY_ID", positionalCount: 1...1)

    static func run(_ arguments: [String]) async throws {
        let (action, rest) = try menu.select(arguments)
        switch action {
        case "rotate-personal-data":
            let parsed = try rotateSyntax.parse(rest)
            try await rotate(newKeyFile: parsed.value("--new-key-file"), forgetPrevious: parsed.has("--forget-previous"))
        case "create":
            let parsed = try createSyntax.parse(rest)
            guard let role = try parsed.choice("--role", among: Role.allCases.map(\.rawValue)).flatMap(Role.init(rawValue:))
            else {
                throw createSyntax.mistake("--role is required")
            }
            try await create(role: role, subject: parsed.value("--subject"), name: parsed.value("--name"))
        case "list":
            let parsed = try listSyntax.parse(rest)
            let role = try parsed.choice("--role", among: Role.allCases.map(\.rawValue)).flatMap(Role.init(rawValue:))
            try await list(role: role, limit: try parsed.integer("--limit", in: 1...Int.max))
        default:
            let parsed = try revokeSyntax.parse(rest)
            try await revoke(keyId: parsed.positionals[0])
        }
    }

    static func create(role: Role, subject: String?, name: String?) async throws {
        let minted: MintedKey
        do {
            try APIKeys.check(role: role, subject: subject, name: name)
            let url = try Configuration().databaseURL()
            minted = try await PostgresPool.withPool(PostgresConfiguration(url: url, size: 1)) { pool in
                try await APIKeyRegistry(pool: pool).mint(role: role, subject: subject, name: name, createdBy: "cli")
            }
        } catch let error as APIKeys.KeyError {
            throw UsageError(error.message)
        }
        Console.line("key id: \(minted.keyId)")
        Console.line(
            "role: \(minted.role.rawValue)" + (minted.subject.map { ", subject: \($0)" } ?? "")
                + (minted.name.map { ", name: \($0)" } ?? ""))
        Console.line("this key is shown once; store it now:")
        Console.line(minted.key)
    }

    /// The audit's lines: a header, a line per key, and the count.
    static func list(role: Role?, limit: Int?) async throws {
        let url = try Configuration().databaseURL()
        let keys = try await PostgresPool.withPool(PostgresConfiguration(url: url, size: 1)) { pool in
            try await APIKeyRegistry(pool: pool).list(role: role, limit: limit)
        }
        for line in listLines(keys) { Console.line(line) }
    }

    static func listLines(_ keys: [KeyStore.ListedKey]) -> [String] {
        let time = ISO8601DateFormatter()
        func when(_ seconds: Double?) -> String {
            seconds.map { time.string(from: Date(timeIntervalSince1970: $0.rounded(.down))) } ?? "-"
        }
        return ["id\trole\tsubject\tname\tcreated-by\tcreated\trevoked"]
            + keys.map { key in
                [
                    key.keyId, key.role, key.subject ?? "-", key.name ?? "-", key.createdBy ?? "-", when(key.createdAt),
                    when(key.revokedAt),
                ]
                .joined(separator: "\t")
            } + ["\(keys.count) keys"]
    }

    static func rotate(newKeyFile: String?, forgetPrevious: Bool) async throws {
        let configuration = Configuration()
        let url = try configuration.databaseURL()
        let keys = try configuration.personalDataKeys()
        if forgetPrevious {
            if newKeyFile != nil { throw rotateSyntax.mistake("--forget-previous runs alone") }
            let dropped = try await PostgresPool.withPool(PostgresConfiguration(url: url, size: 1)) { pool in
                try await PersonalDataKeys.forgetPreviousWraps(pool: pool)
            }
            Console.line("forgot the previous wrap of \(dropped) data keys")
            return
        }
        let target: WrappingKey
        if let newKeyFile {
            do {
                target = try WrappingKey.load(path: newKeyFile, origin: "--new-key-file")
            } catch {
                throw ConfigurationError(error.message)
            }
        } else {
            guard let current = keys.current else {
                throw rotateSyntax.mistake("give --new-key-file, or set LIVEVISITS_PERSONAL_DATA_KEY_FILE")
            }
            target = current
        }
        let rotation = try await PostgresPool.withPool(PostgresConfiguration(url: url, size: 2)) { pool in
            try await keys.rotate(to: target, pool: pool) { progress in
                if progress.batches % 10 == 0 { Console.line("rewrapped \(progress.rewrapped) data keys") }
            }
        }
        Console.line("rewrapped \(rotation.rewrapped) data keys under \(target.id)")
        if newKeyFile != nil {
            Console.line(
                "next: run every process with LIVEVISITS_PERSONAL_DATA_KEY_FILE=<the new file> and LIVEVISITS_PERSONAL_DATA_PREVIOUS_KEY_FILE=<the old one>, run this command again without --new-key-file, then with --forget-previous"
            )
        }
    }

    static func revoke(keyId: String) async throws {
        let url = try Configuration().databaseURL()
        let revoked = try await PostgresPool.withPool(PostgresConfiguration(url: url, size: 1)) { pool in
            try await APIKeyRegistry(pool: pool).revoke(keyId: keyId, allowedRoles: Role.allCases)
        }
        guard revoked else { throw CommandFailure("no live key with id \(keyId)") }
        Console.line("revoked \(keyId)")
    }
}
