import EventStore
import Synchronization
import Testing
import VisitCommands

/// The one retry of lost version races.
@Suite(.timeLimit(.minutes(1))) struct LostRaceTests {
    struct Other: Error {}

    func conflict() -> EventStoreError {
        EventStoreError(code: .wrongExpectedVersion, message: "lost", actualVersion: 2)
    }

    @Test func aLostRaceIsRunAgainUntilItWins() async throws {
        let attempts = Mutex(0)
        let answer = try await LostRace.retrying {
            let n = attempts.withLock {
                $0 += 1
                return $0
            }
            if n < 3 { throw conflict() }
            return n
        }
        #expect(answer == 3)
    }

    @Test func withoutRetryTheConflictIsTheAnswer() async throws {
        let attempts = Mutex(0)
        await #expect(throws: EventStoreError.self) {
            try await LostRace.retrying(false) { () async throws -> Int in
                attempts.withLock { $0 += 1 }
                throw conflict()
            }
        }
        #expect(attempts.withLock { $0 } == 1)
    }

    @Test func itGivesUpAfterTheLastAttemptAndPassesOtherErrorsAtOnce() async throws {
        let attempts = Mutex(0)
        await #expect(throws: EventStoreError.self) {
            try await LostRace.retrying { () async throws -> Int in
                attempts.withLock { $0 += 1 }
                throw conflict()
            }
        }
        #expect(attempts.withLock { $0 } == LostRace.maxAttempts)
        attempts.withLock { $0 = 0 }
        await #expect(throws: Other.self) {
            try await LostRace.retrying { () async throws -> Int in
                attempts.withLock { $0 += 1 }
                throw Other()
            }
        }
        #expect(attempts.withLock { $0 } == 1)
    }
}
