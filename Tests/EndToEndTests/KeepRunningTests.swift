import Foundation
import Runtime
import TestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// `livevisits demo --keep-running`: the server stays up after the visits, every curl command it prints
/// (the README's curl session) works against it, and Ctrl-C (SIGINT) stops everything with exit 0.
@Suite(.timeLimit(.minutes(10))) struct KeepRunningTests {
    @Test func printedCurlCommandsWorkAndCtrlCStopsEverything() async throws {
        let livevisits = try await BuiltProduct.livevisits()
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("lv-keep-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let output = folder.appendingPathComponent("stdout.txt")
        let demo = try ChildProcess(livevisits, ["demo", "--keep-running", "--dir", folder.path])
            .start(stdout: .file(output.path), stderr: .file(output.path + ".err"))

        // Wait for the help block (the demo plays both visits first).
        var text = ""
        do {
            try await eventually("the demo's printed curl session", within: 300, pollingEvery: 0.1) {
                text = (try? String(contentsOf: output, encoding: .utf8)) ?? ""
                return text.contains("curl -fsS --http2")
            }
        } catch {
            _ = await demo.stop(SIGINT, killAfter: 30)
            // Where the demo stood: its last lines, and what it said on stderr.
            let errors = (try? String(contentsOfFile: output.path + ".err", encoding: .utf8)) ?? ""
            Issue.record("the demo printed:\n\(text.suffix(3000))\nstderr:\n\(errors.suffix(3000))")
            throw error
        }
        let curls = text.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }.filter { $0.hasPrefix("curl ") }
        #expect(curls.count == 7, "the printed curl session: \(text.suffix(1500))")
        for command in curls {
            let outcome = try await Subprocess.run("/bin/sh", ["-c", command])
            #expect(outcome.status == 0, "\(command.prefix(120)) → \(outcome.stderr)")
            #expect(!outcome.stdout.isEmpty, "\(command.prefix(120)) printed nothing")
            if command.contains("/events") { #expect(outcome.stdout.contains("completed")) }
            if command.contains("/live-activities") { #expect(outcome.stdout.contains("\"dismissed\"")) }
            if command.contains("/_sim/deliveries") { #expect(outcome.stdout.contains("\"status\"")) }
            // Run after the booking above it: the new visit is the technician's one not reached yet.
            if command.contains("/delay") { #expect(outcome.stdout.contains("\"version\":2"), "\(outcome.stdout)") }
        }

        // The console's URL is printed (the key beside it, never in it) and the page answers.
        let consoleLine = text.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
            .first { $0.hasPrefix("console ") }
        let consoleURL = consoleLine?.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first.map(String.init)
        #expect(consoleURL?.hasSuffix("/console/") == true, "the console line: \(consoleLine ?? "missing")")
        if let consoleURL {
            let page = try await Subprocess.run("/usr/bin/curl", ["-fsS", consoleURL])
            #expect(page.status == 0 && page.stdout.contains("signin-key"), "GET \(consoleURL) → \(page.stderr)")
        }

        // The tracking link is printed in full and its page's state answers without a key.
        let trackingURL = text.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
            .first { $0.hasPrefix("tracking ") }?
            .split(separator: " ", omittingEmptySubsequences: true).dropFirst().first.map(String.init)
        #expect(trackingURL?.contains("/track/") == true, "the tracking line: \(text.suffix(1500))")
        if let trackingURL {
            let state = try await Subprocess.run("/usr/bin/curl", ["-fsS", trackingURL + "/state"])
            #expect(state.status == 0 && state.stdout.contains("\"completed\""), "GET \(trackingURL)/state → \(state.stderr)")
        }

        // Bounded: a demo that ignored Ctrl-C is killed and fails here instead of hanging the run.
        let status = await demo.stop(SIGINT, killAfter: 60)
        let final = (try? String(contentsOf: output, encoding: .utf8)) ?? ""
        #expect(status == 0, "exit status after Ctrl-C: \(final.suffix(800))")
        #expect(final.contains("stopped the PostgreSQL cluster"))
    }
}
