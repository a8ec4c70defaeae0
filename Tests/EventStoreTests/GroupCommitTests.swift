@testable import EventStore
import Foundation
import Postgres
import TestSupport
import Testing

/// The batched path of `EventStore.append(_:)`: same semantics as one transaction per append.
@Suite struct GroupCommitTests {
    func event(_ n: Int) -> NewEvent {
        NewEvent(type: "tested", data: #"{"n": \#(n)}"#, metadata: EventMetadata(actorRole: "dispatcher", actorSubject: "d-\(n)"))
    }

    /// Runs `count` appends at once and returns each outcome in order.
    func concurrently(
        _ store: EventStore, _ count: Int, _ request: @escaping @Sendable (Int) -> AppendRequest
    ) async -> [Result<AppendResult, EventStoreError>] {
        await withTaskGroup(of: (Int, Result<AppendResult, EventStoreError>).self) { group in
            for i in 0..<count {
                group.addTask {
                    do {
                        return (i, .success(try await store.append(request(i))))
                    } catch let error as EventStoreError {
                        return (i, .failure(error))
                    } catch {
                        return (i, .failure(EventStoreError(code: .unavailable, message: "unexpected: \(error)")))
                    }
                }
            }
            var out = [Result<AppendResult, EventStoreError>?](repeating: nil, count: count)
            for await (i, r) in group { out[i] = r }
            return out.map { $0! }
        }
    }

    @Test func manyConcurrentAppendsToDistinctStreamsShareCommits() async throws {
        let (_, pool) = try await TestDatabase.create()
        let store = EventStore(pool: pool, groupCommit: .batched)
        let outcomes = await concurrently(store, 300) { i in
            AppendRequest(streamName: "distinct-\(i)", events: [NewEvent(type: "e", data: #"{"i": \#(i)}"#)], expectedVersion: .noStream)
        }
        for (i, outcome) in outcomes.enumerated() {
            let result = try outcome.get()
            #expect(result.streamName == "distinct-\(i)")
            #expect(result.firstPosition == 1 && result.lastPosition == 1)
            #expect(result.globalPositions.count == 1)
            #expect(!result.deduplicated)
        }
        #expect(Set(outcomes.compactMap { try? $0.get().globalPositions[0] }).count == 300)
        let stats = try await pool.query("SELECT count(*) AS n, count(DISTINCT transaction_id) AS commits FROM events").first!
        #expect(try stats.int("n") == 300)
        // Batched: fewer commits than appends (at most 4 batches run at once).
        #expect(try stats.int("commits") < 300)
        for i in [0, 150, 299] {
            let read = try await store.readStream("distinct-\(i)")
            #expect(read.count == 1)
            #expect(read[0].data.contains("\(i)"))
        }
    }

    @Test func concurrentAppendsToOneStreamAtOneVersionHaveOneWinner() async throws {
        let (_, pool) = try await TestDatabase.create()
        let store = EventStore(pool: pool, groupCommit: .batched)
        for round in 0..<10 {
            let outcomes = await concurrently(store, 20) { i in
                AppendRequest(streamName: "one", events: [self.event(i)], expectedVersion: round == 0 ? .noStream : .exactly(Int64(round)))
            }
            let winners = outcomes.filter { (try? $0.get()) != nil }
            #expect(winners.count == 1, "round \(round)")
            for case .failure(let error) in outcomes {
                #expect(error.code == .wrongExpectedVersion)
                #expect(error.actualVersion == Int64(round + 1))
            }
        }
        #expect(try await store.readStream("one").map(\.position) == Array(1...10))
    }

    @Test func concurrentAppendsAtAnyVersionAllLandInOrder() async throws {
        let (_, pool) = try await TestDatabase.create()
        let store = EventStore(pool: pool, groupCommit: .batched)
        let outcomes = await concurrently(store, 60) { i in
            AppendRequest(streamName: "any", events: [self.event(i), self.event(i)], expectedVersion: .any)
        }
        let results = try outcomes.map { try $0.get() }
        #expect(Set(results.map(\.firstPosition)).count == 60)
        #expect(results.allSatisfy { $0.lastPosition == $0.firstPosition + 1 })
        let read = try await store.readStream("any")
        #expect(read.map(\.position) == Array(1...120))
        // The two events of one append are adjacent and carry the same data.
        for pair in stride(from: 0, to: 120, by: 2) {
            #expect(read[pair].data == read[pair + 1].data)
        }
    }

    /// A batch built by hand: a conflict in the middle fails alone, duplicates of a stream and of a key in
    /// one batch are settled in order.
    @Test func aConflictInTheMiddleOfABatchFailsAlone() async throws {
        let (_, pool) = try await TestDatabase.create()
        let store = EventStore(pool: pool)
        try await store.append(AppendRequest(streamName: "b", events: [event(0)]))
        let requests = [
            AppendRequest(streamName: "a", events: [event(1)], expectedVersion: .noStream),
            AppendRequest(streamName: "b", events: [event(2)], expectedVersion: .noStream),  // b is at 1
            AppendRequest(streamName: "c", events: [event(3), event(4)], expectedVersion: .noStream, idempotencyKey: "k"),
            AppendRequest(streamName: "a", events: [event(5)], expectedVersion: .noStream),  // loses to the first
            AppendRequest(streamName: "a", events: [event(6)], expectedVersion: .exactly(1)),  // follows the first
            AppendRequest(streamName: "c", events: [event(3), event(4)], expectedVersion: .noStream, idempotencyKey: "k"),
            AppendRequest(streamName: "d", events: [event(7)], expectedVersion: .exactly(0)),
        ]
        let slots = try await pool.withTransaction { connection in
            try EventStore.appendBatch(requests, on: connection, autocommit: false)
        }
        func result(_ i: Int) throws -> AppendResult { try #require(slots[i]).get() }
        func error(_ i: Int) -> EventStoreError? {
            if case .failure(let e)? = slots[i] { return e }
            return nil
        }
        #expect(try result(0).firstPosition == 1)
        #expect(error(1)?.code == .wrongExpectedVersion)
        #expect(error(1)?.actualVersion == 1)
        #expect(try result(2).lastPosition == 2)
        #expect(try !result(2).deduplicated)
        #expect(error(3)?.code == .wrongExpectedVersion)
        #expect(error(3)?.actualVersion == 1)
        #expect(try result(4).firstPosition == 2)
        #expect(try result(5).deduplicated)
        #expect(try result(5).globalPositions == result(2).globalPositions)
        #expect(try result(6).firstPosition == 1)
        #expect(try await store.readStream("a").map(\.data) == [event(1).data, event(6).data])
        #expect(try await store.readStream("b").count == 1)
        #expect(try await store.readStream("c").count == 2)
    }

    /// A concurrent writer holds a position the batch wants: the batch waits for it, then only that append
    /// fails (or moves up, for `.any`), and a half-inserted multi-event append is taken back and redone.
    @Test func aRaceWithAnotherTransactionFailsOnlyThatAppend() async throws {
        let (url, pool) = try await TestDatabase.create()
        let store = EventStore(pool: pool)
        let held = try PostgresConnection(url: url)
        try held.execute(script: "BEGIN")
        try EventStore.append(AppendRequest(streamName: "raced", events: [event(0)]), on: held)
        try EventStore.append(AppendRequest(streamName: "multi", events: [event(0)]), on: held)
        let single = [
            AppendRequest(streamName: "x", events: [event(1)], expectedVersion: .noStream),
            AppendRequest(streamName: "raced", events: [event(2)], expectedVersion: .noStream),
            AppendRequest(streamName: "y", events: [event(3)], expectedVersion: .noStream),
        ]
        let multi = [
            AppendRequest(streamName: "multi", events: [event(4), event(5), event(6)], expectedVersion: .any),
            AppendRequest(streamName: "z", events: [event(7)], expectedVersion: .noStream),
        ]
        // Both batches run at once, each on its own connection, while the held transaction is open.
        async let first = onOwnThread { () -> [EventStore.BatchSlot] in
            let connection = try PostgresConnection(url: url)
            return try EventStore.appendBatch(single, on: connection, autocommit: true)
        }
        async let second = onOwnThread { () -> [EventStore.BatchSlot] in
            let connection = try PostgresConnection(url: url)
            return try connection.transaction { try EventStore.appendBatch(multi, on: $0, autocommit: false) }
        }
        // Let the batches reach the held rows (they wait on them); either order gives the same answers.
        try await Task.sleep(nanoseconds: 300_000_000)
        try held.execute(script: "COMMIT")
        let (a, b) = try await (first, second)
        #expect(try #require(a[0]).get().firstPosition == 1)
        if case .failure(let error)? = a[1] {
            #expect(error.code == .wrongExpectedVersion)
            #expect(error.actualVersion == 1)
        } else {
            Issue.record("an append to a position another transaction took succeeded")
        }
        #expect(try #require(a[2]).get().firstPosition == 1)
        let moved = try #require(b[0]).get()
        #expect(moved.firstPosition == 2 && moved.lastPosition == 4)
        #expect(try #require(b[1]).get().firstPosition == 1)
        let read = try await store.readStream("multi")
        #expect(read.map(\.position) == [1, 2, 3, 4])
        #expect(read.map(\.globalPosition).dropFirst() == moved.globalPositions[...])
    }

    @Test func idempotentRetriesInsideOneBatchReturnTheFirstResult() async throws {
        let (_, pool) = try await TestDatabase.create()
        let store = EventStore(pool: pool, groupCommit: .batched)
        let outcomes = await concurrently(store, 40) { i in
            AppendRequest(streamName: "idem-\(i % 4)", events: [self.event(1)], idempotencyKey: "same-\(i % 4)")
        }
        let results = try outcomes.map { try $0.get() }
        for k in 0..<4 {
            let group = results.enumerated().filter { $0.offset % 4 == k }.map(\.element)
            #expect(group.filter { !$0.deduplicated }.count == 1, "key \(k)")
            #expect(Set(group.map(\.globalPositions)).count == 1, "key \(k)")
            #expect(try await store.readStream("idem-\(k)").count == 1)
        }
        // A later retry still answers the first result.
        let again = try await store.append(AppendRequest(streamName: "idem-0", events: [event(1)], idempotencyKey: "same-0"))
        #expect(again.deduplicated)
        #expect(again.globalPositions == results[0].globalPositions)
    }

    @Test func aRefusedAppendDoesNotFailItsNeighbours() async throws {
        let (_, pool) = try await TestDatabase.create()
        let store = EventStore(pool: pool, groupCommit: .batched)
        let outcomes = await concurrently(store, 41) { i in
            AppendRequest(
                streamName: "n-\(i)", events: [NewEvent(type: "e", data: i == 20 ? "not json" : #"{"i": \#(i)}"#)],
                expectedVersion: .noStream)
        }
        for (i, outcome) in outcomes.enumerated() {
            switch outcome {
            case .success: #expect(i != 20)
            case .failure(let error):
                #expect(i == 20)
                #expect(error.code == .invalidEventData)
            }
        }
        #expect(try await pool.query("SELECT count(*) AS n FROM events").first!.int("n") == 40)
    }

    @Test func directModeKeepsOneTransactionPerAppend() async throws {
        let (_, pool) = try await TestDatabase.create()
        let store = EventStore(pool: pool, groupCommit: .direct)
        let outcomes = await concurrently(store, 20) { i in
            AppendRequest(streamName: "d-\(i)", events: [self.event(i)], expectedVersion: .noStream)
        }
        #expect(outcomes.allSatisfy { (try? $0.get()) != nil })
        let commits = try await pool.query("SELECT count(DISTINCT transaction_id) AS n FROM events").first!.int("n")
        #expect(commits == 20)
    }
}
