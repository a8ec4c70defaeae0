import Foundation
import Runtime
import TestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// The built `livevisits` against a database whose customers' data keys are wrapped under a key file: started
/// without that file, or with another, `serve` and `worker` refuse to start with one line naming
/// `LIVEVISITS_PERSONAL_DATA_KEY_FILE` (exit 1), instead of answering every customer's data as unreadable.
/// And `keys list`, the audit: every key, newest first, in fixed columns, never a secret.
@Suite(.timeLimit(.minutes(10))) struct PersonalDataKeyFileTests {
    /// A scratch folder with key files and the environment of a process on a fresh migrated database.
    struct Rig {
        let livevisits: String
        let databaseURL: String
        let folder: URL

        static func make() async throws -> Rig {
            let livevisits = try await BuiltProduct.livevisits()
            let databaseURL = try await TestDatabase.createMigrated()
            let folder = FileManager.default.temporaryDirectory.appendingPathComponent("lv-kf-\(UUID().uuidString.prefix(8))")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            return Rig(livevisits: livevisits, databaseURL: databaseURL, folder: folder)
        }

        /// A new 32-byte key file in the folder.
        func keyFile(_ name: String) throws -> String {
            var bytes = [UInt8](repeating: 0, count: 32)
            for i in bytes.indices { bytes[i] = UInt8.random(in: 0...255) }
            let path = folder.appendingPathComponent(name).path
            guard FileManager.default.createFile(atPath: path, contents: Data(bytes), attributes: [.posixPermissions: 0o600])
            else {
                throw CocoaError(.fileWriteUnknown)
            }
            return path
        }

        func environment(keyFile: String?) -> [String: String] {
            var environment = ProcessInfo.processInfo.environment
            environment["LIVEVISITS_DATABASE_URL"] = databaseURL
            environment["LIVEVISITS_HTTP_ADDR"] = "127.0.0.1:0"
            environment["LIVEVISITS_MIGRATIONS_DIR"] = TestDatabase.migrationsDirectory.path
            environment["LIVEVISITS_PROJECTIONS_DIR"] = TestDatabase.projectionsDirectory.path
            environment["LIVEVISITS_PERSONAL_DATA_KEY_FILE"] = keyFile
            environment["LIVEVISITS_PERSONAL_DATA_PREVIOUS_KEY_FILE"] = nil
            return environment
        }

        func run(_ arguments: [String], keyFile: String? = nil) async throws -> Subprocess.Outcome {
            try await Subprocess.run(livevisits, arguments, environment: environment(keyFile: keyFile))
        }

        /// `serve --api-only` with `keyFile` until `body` returns (then SIGTERM), given the base URL it listens on.
        func serving<T>(keyFile: String, _ body: (String) async throws -> T) async throws -> T {
            let output = folder.appendingPathComponent("serve-\(UUID().uuidString.prefix(6)).txt").path
            let server = try ChildProcess(livevisits, ["serve", "--api-only"], environment: environment(keyFile: keyFile))
                .start(stdout: .file(output), stderr: .file(output + ".err"))
            var base = ""
            do {
                try await eventually("serve announces its address", within: 60, pollingEvery: 0.05) {
                    let text = (try? String(contentsOfFile: output, encoding: .utf8)) ?? ""
                    guard let line = text.split(separator: "\n").first(where: { $0.contains("listening on http://") }) else {
                        return false
                    }
                    base = String(line[line.range(of: "http://")!.lowerBound...])
                    return true
                }
                let result = try await body(base)
                _ = await server.stop(SIGTERM, killAfter: 30)
                return result
            } catch {
                _ = await server.stop(SIGTERM, killAfter: 30)
                throw error
            }
        }

        /// A dispatcher key minted by the CLI.
        func dispatcherKey() async throws -> String {
            let minted = try await run(["keys", "create", "--role", "dispatcher"])
            try #require(minted.status == 0, "\(minted.stderr)")
            return try #require(minted.stdout.split(separator: "\n").last.map(String.init))
        }
    }

    /// Books one visit for a customer through a server holding `keyFile`: the database then holds a data
    /// key wrapped under it.
    static func bookAVisit(_ rig: Rig, keyFile: String) async throws {
        let key = try await rig.dispatcherKey()
        try await rig.serving(keyFile: keyFile) { base in
            let now = Int(Date().timeIntervalSince1970)
            let visit = """
                {"visitId":"v-kf-1","customerId":"c-kf-1",\
                "attributes":{"customerFirstName":"Ada","serviceAddress":"1 Key St","jobSummary":"Boiler"},\
                "technician":{"id":"t-1","name":"Sam","avatarSymbol":"person.crop.circle","vanDescription":"White van"},\
                "arrivalWindow":{"start":\(now + 600),"end":\(now + 1800)},"kilometresAway":14.0}
                """
            let booked = try await Subprocess.run(
                "/usr/bin/curl",
                [
                    "-sS", "-o", "/dev/null", "-w", "%{http_code}", "-X", "POST", "\(base)/v1/visits",
                    "-H", "Authorization: Bearer \(key)", "-H", "Content-Type: application/json", "--data", visit,
                ])
            #expect(booked.stdout == "201", "POST /v1/visits → \(booked.stdout) \(booked.stderr)")
        }
    }

    @Test func serveAndWorkerRefuseToStartWithoutTheKeyFileOrWithAnother() async throws {
        let rig = try await Rig.make()
        defer { try? FileManager.default.removeItem(at: rig.folder) }
        let right = try rig.keyFile("right.key")
        try await PersonalDataKeyFileTests.bookAVisit(rig, keyFile: right)

        for command in [["serve", "--api-only"], ["worker"], ["serve"]] {
            let missing = try await rig.run(command, keyFile: nil)
            #expect(missing.status == 1, "\(command) without a key file: \(missing.stderr)")
            let lines = missing.stderr.split(separator: "\n")
            #expect(lines.count == 1, "one line: \(missing.stderr)")
            #expect(missing.stderr.contains("LIVEVISITS_PERSONAL_DATA_KEY_FILE is not set"), "\(missing.stderr)")
            #expect(missing.stderr.contains("wrapped under wk-"), "\(missing.stderr)")
        }
        let other = try rig.keyFile("other.key")
        for command in [["serve", "--api-only"], ["worker"]] {
            let wrong = try await rig.run(command, keyFile: other)
            #expect(wrong.status == 1, "\(command) with another key file: \(wrong.stderr)")
            #expect(wrong.stderr.split(separator: "\n").count == 1, "one line: \(wrong.stderr)")
            #expect(
                wrong.stderr.contains("LIVEVISITS_PERSONAL_DATA_KEY_FILE holds wk-")
                    && wrong.stderr.contains("give the key file they were wrapped with"), "\(wrong.stderr)")
        }
        // The right file starts (and answers /readyz 200).
        let ready = try await rig.serving(keyFile: right) { base in
            try await Subprocess.run("/usr/bin/curl", ["-sS", "-o", "/dev/null", "-w", "%{http_code}", "\(base)/readyz"])
        }
        #expect(ready.stdout == "200", "\(ready.stderr)")
    }

    @Test func keysListPrintsEveryKeyInFixedColumnsAndNoSecret() async throws {
        let rig = try await Rig.make()
        defer { try? FileManager.default.removeItem(at: rig.folder) }
        let empty = try await rig.run(["keys", "list"])
        #expect(empty.status == 0, "\(empty.stderr)")
        #expect(empty.stdout == "id\trole\tsubject\tname\tcreated-by\tcreated\trevoked\n0 keys\n")

        let ops = try await rig.run(["keys", "create", "--role", "ops"])
        let technician = try await rig.run(
            ["keys", "create", "--role", "technician", "--subject", "t-42", "--name", "Marcus Ødegård"])
        #expect(technician.stdout.contains("role: technician, subject: t-42, name: Marcus Ødegård\n"), "\(technician.stdout)")
        let opsId = try #require(ops.stdout.split(separator: "\n").first?.split(separator: " ").last.map(String.init))
        let technicianId = try #require(
            technician.stdout.split(separator: "\n").first?.split(separator: " ").last.map(String.init))
        let secrets = [ops, technician].compactMap { $0.stdout.split(separator: "\n").last.map(String.init) }
        #expect(try await rig.run(["keys", "revoke", opsId]).status == 0)

        let listed = try await rig.run(["keys", "list"])
        #expect(listed.status == 0, "\(listed.stderr)")
        let lines = listed.stdout.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        #expect(lines.first == "id\trole\tsubject\tname\tcreated-by\tcreated\trevoked")
        #expect(lines.dropLast().last == "2 keys")
        let rows = lines.dropFirst().prefix(2).map {
            $0.split(separator: "\t", omittingEmptySubsequences: false).map(String.init)
        }
        #expect(rows.allSatisfy { $0.count == 7 }, "seven columns: \(lines)")
        let byId = Dictionary(uniqueKeysWithValues: rows.map { ($0[0], $0) })
        let isoTime = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$/
        #expect(byId[technicianId].map { Array($0[1...4]) } == ["technician", "t-42", "Marcus Ødegård", "cli"])
        #expect(byId[technicianId]?[6] == "-", "live: no revocation time")
        #expect(byId[opsId].map { Array($0[1...4]) } == ["ops", "-", "-", "cli"], "no name: -")
        #expect((try? isoTime.wholeMatch(in: byId[opsId]?[5] ?? "")) != nil, "\(lines)")
        #expect((try? isoTime.wholeMatch(in: byId[opsId]?[6] ?? "")) != nil, "revoked: \(lines)")
        for secret in secrets { #expect(!listed.stdout.contains(secret), "no key is printed") }
        #expect(!listed.stdout.contains("lv_"), "nothing key-shaped is printed")

        let technicians = try await rig.run(["keys", "list", "--role", "technician"])
        #expect(technicians.stdout.contains(technicianId) && !technicians.stdout.contains(opsId))
        #expect(technicians.stdout.hasSuffix("1 keys\n"))
        let bad = try await rig.run(["keys", "list", "--role", "admin"])
        #expect(bad.status == 2, "\(bad.stderr)")
    }
}
