import EventStore
import Foundation
import Postgres
import TestSupport
import Testing

/// Appends through the async API (one autocommitted statement per append) and reads.
@Suite(.timeLimit(.minutes(5))) struct AppendTests {
    func event(_ n: Int) -> NewEvent {
        NewEvent(type: "tested", data: #"{"n": \#(n)}"#, metadata: EventMetadata(actorRole: "dispatcher", actorSubject: "d-1"))
    }

    @Test func appendsAndReadsAStreamInOrder() async throws {
        try await withTestDatabase { _, pool in
            let store = EventStore(pool: pool)
            let first = try await store.append(
                AppendRequest(streamName: "visit-a", events: [event(1), event(2)], expectedVersion: .noStream))
            #expect(first.firstPosition == 1)
            #expect(first.lastPosition == 2)
            #expect(first.globalPositions.count == 2)
            let second = try await store.append(
                AppendRequest(streamName: "visit-a", events: [event(3)], expectedVersion: .exactly(2)))
            #expect(second.lastPosition == 3)
            let read = try await store.readStream("visit-a")
            #expect(read.map(\.position) == [1, 2, 3])
            #expect(read.map(\.type) == ["tested", "tested", "tested"])
            #expect(read[2].data.contains("3"))
            #expect(read[0].metadata.actorRole == "dispatcher")
            #expect(read[0].metadata.actorSubject == "d-1")
        }
    }

    @Test func recordsTheCallersTime() async throws {
        try await withTestDatabase { _, pool in
            let store = EventStore(pool: pool)
            let result = try await store.append(AppendRequest(streamName: "s", events: [event(1)], recordedAt: 1_790_000_123))
            #expect(result.recordedAt == 1_790_000_123)
            #expect(try await store.readStream("s")[0].recordedAt == 1_790_000_123)
        }
    }

    @Test func wrongExpectedVersionIsATypedConflict() async throws {
        try await withTestDatabase { _, pool in
            let store = EventStore(pool: pool)
            try await store.append(AppendRequest(streamName: "s", events: [event(1)], expectedVersion: .noStream))
            await #expect(throws: EventStoreError.self) {
                try await store.append(AppendRequest(streamName: "s", events: [event(2)], expectedVersion: .noStream))
            }
            do {
                try await store.append(AppendRequest(streamName: "s", events: [event(2)], expectedVersion: .exactly(5)))
                Issue.record("append at the wrong version succeeded")
            } catch let error as EventStoreError {
                #expect(error.code == .wrongExpectedVersion)
                #expect(error.actualVersion == 1)
            }
            #expect(try await store.readStream("s").count == 1)
        }
    }

    @Test func concurrentAppendsAtTheSameVersionHaveExactlyOneWinner() async throws {
        try await withTestDatabase(poolSize: 8) { _, pool in
            let store = EventStore(pool: pool)
            let rounds = 40
            let writers = 6
            for round in 0..<rounds {
                let stream = "race-\(round % 4)"
                let version = try await store.readStream(stream).count
                let outcomes = await withTaskGroup(of: Bool.self) { group -> [Bool] in
                    for w in 0..<writers {
                        group.addTask {
                            do {
                                try await store.append(
                                    AppendRequest(
                                        streamName: stream, events: [event(w)], expectedVersion: .exactly(Int64(version))))
                                return true
                            } catch let error as EventStoreError where error.code == .wrongExpectedVersion {
                                return false
                            } catch {
                                Issue.record("unexpected error \(error)")
                                return false
                            }
                        }
                    }
                    return await group.reduce(into: []) { $0.append($1) }
                }
                #expect(outcomes.filter { $0 }.count == 1, "round \(round)")
            }
            var total = 0
            for s in 0..<4 {
                let events = try await store.readStream("race-\(s)")
                #expect(events.map(\.position) == Array(1...Int64(events.count)))
                total += events.count
            }
            #expect(total == rounds)
        }
    }

    @Test func badInputIsRefusedBeforeTheDatabase() async throws {
        try await withTestDatabase { _, pool in
            let store = EventStore(pool: pool)
            let cases: [(AppendRequest, EventStoreError.Code)] = [
                (AppendRequest(streamName: "", events: [event(1)]), .invalidStreamName),
                (AppendRequest(streamName: String(repeating: "x", count: 201), events: [event(1)]), .invalidStreamName),
                (AppendRequest(streamName: "a\u{0}b", events: [event(1)]), .invalidStreamName),
                // The other control characters: DEL and the C1 range.
                (AppendRequest(streamName: "a\u{7F}b", events: [event(1)]), .invalidStreamName),
                (AppendRequest(streamName: "a\u{85}b", events: [event(1)]), .invalidStreamName),
                (AppendRequest(streamName: "a\u{9F}b", events: [event(1)]), .invalidStreamName),
                // ASCII letters only: a letter with an accent is not one.
                (AppendRequest(streamName: "s", events: [NewEvent(type: "vis\u{EF}t", data: "{}")]), .invalidEventType),
                (AppendRequest(streamName: "s", events: [NewEvent(type: "", data: "{}")]), .invalidEventType),
                (AppendRequest(streamName: "s", events: [NewEvent(type: "drop table;", data: "{}")]), .invalidEventType),
                (
                    AppendRequest(
                        streamName: "s",
                        events: [NewEvent(type: "big", data: "{\"x\":\"" + String(repeating: "a", count: 70_000) + "\"}")]),
                    .eventTooLarge
                ),
                (AppendRequest(streamName: "s", events: []), .invalidEventData),
                (AppendRequest(streamName: "s", events: [NewEvent(type: "t", data: "not json")]), .invalidEventData),
            ]
            for (request, code) in cases {
                do {
                    try await store.append(request)
                    Issue.record("accepted bad input for \(code)")
                } catch let error as EventStoreError {
                    #expect(error.code == code)
                }
            }
            #expect(try await pool.query("SELECT count(*) AS n FROM events").first!.int("n") == 0)
            // Around the control ranges, and beyond ASCII, a stream name is any text.
            for name in ["a\u{A0}b", "visit-\u{E9}\u{2713}", "a\u{20}b~"] {
                try await store.append(AppendRequest(streamName: name, events: [NewEvent(type: "a.B_9-x", data: "{}")]))
            }
        }
    }
}
