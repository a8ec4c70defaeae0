import Testing

@testable import VisitCommands

/// The batcher's schedule alone (no database): which commands leave together, when the next batch may form,
/// and who writes next.
@Suite struct CommandBatchScheduleTests {
    struct Command: ScheduledCommand, Equatable {
        let id: UInt64
        let visitId: String
        var sharesItsVisit = true
    }

    typealias Schedule = CommandBatchSchedule<Command, String>

    func schedule(batchSize: Int = 64, batches: Int = 2, writes: Int = 1) -> Schedule {
        Schedule(maxBatchSize: batchSize, maxConcurrentBatches: batches, maxConcurrentWrites: writes)
    }

    @Test func aLoneCommandLeavesAtOnceAndTheNextWaitWhileItForms() {
        var s = schedule()
        let r1 = s.submit(Command(id: 1, visitId: "a"))
        #expect(r1?.map(\.id) == [1])
        let r2 = s.submit(Command(id: 2, visitId: "b"))
        #expect(r2 == nil, "a second batch formed beside the first")
        let r3 = s.submit(Command(id: 3, visitId: "c"))
        #expect(r3 == nil)
        // Its writes go out: what waited leaves together.
        let r4 = s.wrote()
        #expect(r4?.map(\.id) == [2, 3])
        #expect(s.running == 2 && s.forming == 1 && s.batches == 2)
    }

    @Test func noMoreBatchesRunThanAllowed() {
        var s = schedule(batches: 2)
        _ = s.submit(Command(id: 1, visitId: "a"))
        _ = s.submit(Command(id: 2, visitId: "b"))
        let second = s.wrote()
        #expect(second?.map(\.id) == [2])
        let r5 = s.submit(Command(id: 3, visitId: "c"))
        #expect(r5 == nil)
        let r6 = s.wrote()
        #expect(r6 == nil, "a third batch ran beside two")
        // The first ends: the waiting command takes its place.
        let r7 = s.finished([Command(id: 1, visitId: "a")])
        #expect(r7?.map(\.id) == [3])
        #expect(s.running == 2)
    }

    @Test func aVisitInFlightWaitsAndItsCommandsKeepTheirOrder() {
        var s = schedule()
        _ = s.submit(Command(id: 1, visitId: "a"))
        _ = s.submit(Command(id: 2, visitId: "a"))
        _ = s.submit(Command(id: 3, visitId: "b"))
        _ = s.submit(Command(id: 4, visitId: "a"))
        // Visit a is in flight: only b leaves; a's commands wait, in order.
        let r8 = s.wrote()
        #expect(r8?.map(\.id) == [3])
        #expect(s.waiting.map(\.id) == [2, 4])
        _ = s.wrote()
        let r9 = s.finished([Command(id: 1, visitId: "a")])
        #expect(r9?.map(\.id) == [2, 4])
    }

    @Test func aCommandThatMayNotShareItsVisitLeavesAloneAndHoldsTheLaterOnes() {
        var s = schedule()
        _ = s.submit(Command(id: 1, visitId: "x"))
        _ = s.submit(Command(id: 2, visitId: "a"))
        _ = s.submit(Command(id: 3, visitId: "a", sharesItsVisit: false))
        _ = s.submit(Command(id: 4, visitId: "a"))
        let r10 = s.wrote()
        #expect(r10?.map(\.id) == [2])
        #expect(s.waiting.map(\.id) == [3, 4])
    }

    @Test func aBatchNeverTakesMoreThanItsSize() {
        var s = schedule(batchSize: 2)
        _ = s.submit(Command(id: 1, visitId: "a"))
        for id in 2...5 { _ = s.submit(Command(id: UInt64(id), visitId: "v\(id)")) }
        let r11 = s.wrote()
        #expect(r11?.map(\.id) == [2, 3])
        #expect(s.waiting.map(\.id) == [4, 5])
    }

    @Test func aWithdrawnCommandNeverLeaves() {
        var s = schedule()
        _ = s.submit(Command(id: 1, visitId: "a"))
        _ = s.submit(Command(id: 2, visitId: "b"))
        let r12 = s.withdraw(2)
        #expect(r12?.id == 2)
        let r13 = s.withdraw(1)
        #expect(r13 == nil, "a command in a batch was withdrawn")
        let r14 = s.wrote()
        #expect(r14 == nil)
    }

    @Test func lateJoinersAreTheAdmittedWaitingCommandsOnVisitsNotInFlight() {
        var s = schedule()
        _ = s.submit(Command(id: 1, visitId: "a"))
        _ = s.submit(Command(id: 2, visitId: "a"))
        _ = s.submit(Command(id: 3, visitId: "known"))
        _ = s.submit(Command(id: 4, visitId: "unknown"))
        let joining = s.lateJoiners(room: 10) { $0.visitId == "known" }
        #expect(joining.map(\.id) == [3])
        #expect(s.waiting.map(\.id) == [2, 4])
        let r15 = s.lateJoiners(room: 0) { _ in true }
        #expect(r15.isEmpty)
    }

    @Test func turnsToWriteGoInTheOrderAsked() {
        var s = schedule(batches: 3, writes: 1)
        let r16 = s.requestTurn(1, writer: "first")
        #expect(r16)
        let r17 = s.requestTurn(2, writer: "second")
        #expect(!r17)
        let r18 = s.requestTurn(3, writer: "third")
        #expect(!r18)
        let r19 = s.releaseTurn()
        #expect(r19 == "second")
        #expect(s.writing == 1 && s.writers.count == 1)
        let r20 = s.releaseTurn()
        #expect(r20 == "third")
        let r21 = s.releaseTurn()
        #expect(r21 == nil)
        #expect(s.writing == 0)
    }

    @Test func aWriterThatGivesUpLeavesTheLineUnlessItWasGivenTheTurn() {
        var s = schedule(batches: 3, writes: 1)
        let r22 = s.requestTurn(1, writer: "first")
        #expect(r22)
        let r23 = s.requestTurn(2, writer: "second")
        #expect(!r23)
        let r24 = s.requestTurn(3, writer: "third")
        #expect(!r24)
        let r25 = s.abandonTurn(2)
        #expect(r25, "it was still in line")
        let r26 = s.releaseTurn()
        #expect(r26 == "third")
        let r27 = s.abandonTurn(3)
        #expect(!r27, "it holds the turn now")
        let r28 = s.releaseTurn()
        #expect(r28 == nil && s.writing == 0)
    }

    @Test func twoWritesAllowedLetTwoWriteAtOnce() {
        var s = schedule(batches: 2, writes: 2)
        let r29 = s.requestTurn(1, writer: "first")
        #expect(r29)
        let r30 = s.requestTurn(2, writer: "second")
        #expect(r30)
        let r31 = s.requestTurn(3, writer: "third")
        #expect(!r31)
        #expect(schedule(batches: 1, writes: 2).maxConcurrentWrites == 1, "writes are capped at batches")
    }
}
