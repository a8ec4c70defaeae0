import Foundation
import TestSupport
import Testing
import VisitDomain
import VisitProjections

/// Reading the rules from the projections directory (the parsing itself is the domain's, tested there).
@Suite(.timeLimit(.minutes(1))) struct RulesLoadingTests {
    @Test func theShippedDirectoryHoldsTheContractsTable() throws {
        #expect(try ProjectionRules.load(directory: TestDatabase.projectionsDirectory).withoutLocales == .contractDefault)
    }

    @Test func theEnvironmentNamesTheDirectory() throws {
        let directory = TestDatabase.projectionsDirectory.path
        #expect(
            try ProjectionRules.load(environment: ["LIVEVISITS_PROJECTIONS_DIR": directory]).withoutLocales == .contractDefault)
        #expect(ProjectionRules.directory(environment: [:]).path.hasSuffix("/Projections"))
        #expect(ProjectionRules.directory(environment: ["LIVEVISITS_PROJECTIONS_DIR": ""]).path.hasSuffix("/Projections"))
        #expect(throws: ProjectionRulesError.self) {
            try ProjectionRules.load(environment: ["LIVEVISITS_PROJECTIONS_DIR": "/nonexistent"])
        }
    }

    @Test func aMissingFileIsUnreadableAndNamesItsPath() {
        do {
            _ = try ProjectionRules.load(directory: URL(fileURLWithPath: "/nonexistent-projections"))
            Issue.record("loaded a missing file")
        } catch {
            #expect(error.code == .unreadable)
            #expect(error.message.contains("/nonexistent-projections/rules.json"))
        }
    }
}
