import EventStore
import Foundation
import PersonalData
import Postgres
import Runtime
import Synchronization
import TestSupport
import Testing
import VisitDomain
import VisitProjections
import VisitTestSupport

@testable import VisitCommands

/// Group commit for visit commands (`VisitCommandBatcher`, `VisitCommandHandler.executeBatch`).
@Suite(.serialized, .timeLimit(.minutes(5))) struct CommandBatchTests {
    func progress(_ km: Double) throws -> VisitEvent {
        try VisitEventRequest.parse(Array(#"{"type": "progress", "kilometresAway": \#(km)}"#.utf8))
    }

    func command(_ visit: String, _ event: VisitEvent) -> VisitCommand {
        VisitCommand(visitId: visit, event: event, context: VisitFixtures.dispatcher, isCreation: false)
    }

    /// The transaction that wrote each event, by `stream@position`.
    func transactionsOfEvents(in f: VisitFixtures) async throws -> [String: String] {
        try await f.pool.withConnection { c in
            var out: [String: String] = [:]
            for row in try c.query("SELECT stream_name || '@' || position AS at, transaction_id::text AS tx FROM events").rows {
                out[row["at"]!] = row["tx"]!
            }
            return out
        }
    }

    /// Whether `statement` (a batch's slow write) is running now in the fixtures' database.
    func sleeping(_ statement: String, in f: VisitFixtures) async throws -> Bool {
        try await f.pool.query(
            "SELECT count(*) AS n FROM pg_stat_activity WHERE query = \(statement) AND datname = current_database()"
        ).first?.int("n") == 1
    }

    @Test func concurrentCommandsShareBatchesAndEachLandsOnce() async throws {
        let pushes = CountingEnqueuer()
        try await VisitFixtures.with(pushes: pushes) { f in
            let visits = (0..<20).map { "v-b\($0)" }
            for v in visits { _ = try await f.schedule(v) }
            let batcher = VisitCommandBatcher(handler: f.handler)
            // 200 commands, 10 per visit, all at once: same-visit commands must queue behind each other.
            let results = try await withThrowingTaskGroup(of: VisitCommandResult.self) { group -> [VisitCommandResult] in
                for round in 0..<10 {
                    for v in visits {
                        let event = try progress(Double(round) + 0.5)
                        group.addTask { try await batcher.execute(command(v, event)) }
                    }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(results.count == 200)
            #expect(batcher.batchesRun < 200, "no two commands shared a batch")
            let rows = try await f.rows()
            for v in visits {
                let stream = try await f.handler.store.readStream("visit-\(v)")
                #expect(stream.map(\.position) == Array(1...11), "\(v)")
                #expect(rows[v]?.version == 11)
                // Each command saw the version before it: the results of one visit are its versions 2…11, once each.
                let versions = results.filter { $0.state.visitId == v }.map(\.state.version).sorted()
                #expect(versions == Array(2...11))
            }
        }
    }

    /// Bookings in one batch get their customers' data keys with the batch's read of states (one key per
    /// customer, made on first use, an existing one kept), and seal their personal fields under them.
    @Test func bookingsOfABatchSealUnderTheirCustomersKeysReadWithTheStates() async throws {
        try await VisitFixtures.with { f in
            let keys = PersonalDataKeys(current: nil)
            let handler = VisitCommandHandler(
                store: f.handler.store, readModel: f.readModel, pushes: f.handler.pushes, clock: f.clock, personalData: keys)
            let existing = try await f.pool.withConnection { c in try keys.dataKey(forCustomer: "c-b", on: c) }
            func booking(_ visit: String, _ customer: String) throws -> VisitCommand {
                VisitCommand(
                    visitId: visit, event: .scheduled(try f.booking(visit, customer: customer)),
                    context: VisitFixtures.dispatcher, isCreation: true)
            }
            let batch = [try booking("v-k1", "c-a"), try booking("v-k2", "c-a"), try booking("v-k3", "c-b")]
            // The read that decides them brings both customers' keys (c-a's made by it), in its round trip.
            let read = try await f.pool.withConnection { c in try handler.currentStates(batch, on: c) }
            #expect(read.states.count == 3 && Set(read.keys.keys) == ["c-a", "c-b"] && read.keys["c-b"]?.id == existing.id)
            let outcomes = try await f.pool.withConnection { c in handler.executeBatch(batch, on: c) }
            #expect(outcomes.map { (try? $0.get())?.state.version } == [1, 1, 1], "\(outcomes)")
            let made = try await f.pool.withConnection { c in
                try c.query("SELECT customer_id, key_id FROM personal_data_keys ORDER BY customer_id").rows.map {
                    [try $0.string("customer_id"), try $0.string("key_id")]
                }
            }
            #expect(made.count == 2 && made[0] == ["c-a", read.keys["c-a"]?.id] && made[1] == ["c-b", existing.id], "\(made)")
            for (visit, keyId) in [("v-k1", made[0][1]), ("v-k2", made[0][1]), ("v-k3", existing.id)] {
                let data = try await f.handler.store.readStream("visit-\(visit)")[0].data
                #expect(data.contains("\"enc:v1:\(keyId):"), "\(visit): \(data)")
                #expect(!data.contains("Alex"), "\(visit) holds its customer's name in plain text")
            }
        }
    }

    /// A batch that books for a customer without a key makes the key in its own write: the key and the visit
    /// commit together (nothing commits before the batch's write does).
    @Test func aBatchMakesANewCustomersKeyInItsWrite() async throws {
        try await VisitFixtures.with { f in
            let keys = PersonalDataKeys(current: nil)
            let handler = VisitCommandHandler(
                store: f.handler.store, readModel: f.readModel, pushes: f.handler.pushes, clock: f.clock, personalData: keys)
            let batch = try ["v-w1", "v-w2"].map { visit in
                VisitCommand(
                    visitId: visit, event: .scheduled(try f.booking(visit, customer: "c-new")),
                    context: VisitFixtures.dispatcher, isCreation: true)
            }
            let outcomes = try await f.pool.withConnection { c in handler.executeBatch(batch, on: c) }
            #expect(outcomes.map { (try? $0.get())?.state.version } == [1, 1], "\(outcomes)")
            let together = try await f.pool.withConnection { c in
                try c.query(
                    """
                    SELECT k.key_id, k.xmin::text = (SELECT xid(e.transaction_id)::text FROM events e
                                                     WHERE e.stream_name = 'visit-v-w1') AS same
                    FROM personal_data_keys k WHERE k.customer_id = 'c-new'
                    """
                ).rows.map { [try $0.string("key_id"), try $0.string("same")] }
            }
            #expect(together.count == 1 && together[0][1] == "t", "the key committed with the visits: \(together)")
            let data = try await f.handler.store.readStream("visit-v-w2")[0].data
            #expect(data.contains("\"enc:v1:\(together.first?[0] ?? "?"):"), "\(data)")
        }
    }

    /// A key that another writer makes for the customer between a batch's read and its write fails that write;
    /// the batch is redone one by one and its bookings seal under the key that stands.
    @Test func aKeyMadeElsewhereMeanwhileIsTheOneThatStands() async throws {
        try await VisitFixtures.with { f in
            let keys = PersonalDataKeys(current: nil)
            let handler = VisitCommandHandler(
                store: f.handler.store, readModel: f.readModel, pushes: f.handler.pushes, clock: f.clock, personalData: keys)
            let booking = VisitCommand(
                visitId: "v-race", event: .scheduled(try f.booking("v-race", customer: "c-race")),
                context: VisitFixtures.dispatcher, isCreation: true)
            let redone = f.handler.store.metrics.value("livevisits_command_batches_redone_total") ?? 0
            let url = f.databaseURL
            let outcomes = try await f.pool.withConnection { c in
                let other = try PostgresConnection(url: url)
                return handler.executeBatch(
                    [booking], on: c,
                    writing: { _ in
                        // Another process books for the same customer first.
                        _ = try? keys.dataKey(forCustomer: "c-race", on: other)
                        return true
                    })
            }
            #expect((try? outcomes[0].get())?.state.version == 1, "\(outcomes)")
            #expect((f.handler.store.metrics.value("livevisits_command_batches_redone_total") ?? 0) == redone + 1)
            let stands = try await f.pool.withConnection { c in
                try c.query("SELECT key_id FROM personal_data_keys WHERE customer_id = 'c-race'").rows.map {
                    try $0.string("key_id")
                }
            }
            #expect(stands.count == 1)
            let data = try await f.handler.store.readStream("visit-v-race")[0].data
            #expect(data.contains("\"enc:v1:\(stands.first ?? "?"):"), "\(data)")
        }
    }

    /// A command whose `refuseIfAnyRow` read finds a row is refused before the write, alone: the rest of
    /// its batch commits in the shared pipeline (no redo one by one), and what it would have run does not.
    @Test func aCommandRefusedByItsPreconditionLeavesItsBatchWhole() async throws {
        try await VisitFixtures.with { f in
            for v in ["v-p1", "v-p2", "v-taken"] { _ = try await f.schedule(v) }
            try await f.pool.withConnection { c in try c.execute(script: "CREATE TABLE taken (k text)") }
            var taken = command("v-taken", try progress(5))
            taken.refuseIfAnyRow = "SELECT 1 WHERE \(true)"
            taken.alsoRun = { _ in ["INSERT INTO taken VALUES ('ran')"] }
            var free = command("v-p2", try progress(6))
            free.refuseIfAnyRow = "SELECT 1 WHERE \(false)"
            let redone = f.handler.store.metrics.value("livevisits_command_batches_redone_total") ?? 0
            let batch = [command("v-p1", try progress(4)), taken, free]
            let outcomes = try await f.pool.withConnection { c in f.handler.executeBatch(batch, on: c) }
            #expect((try? outcomes[0].get())?.state.version == 2)
            #expect(throws: CommandPreconditionFailed.self) { try outcomes[1].get() }
            #expect((try? outcomes[2].get())?.state.version == 2)
            #expect(try await f.handler.store.readStream("visit-v-taken").count == 1)
            #expect(try await f.pool.withConnection { c in try c.query("SELECT count(*) AS n FROM taken").first?["n"] } == "0")
            #expect(
                (f.handler.store.metrics.value("livevisits_command_batches_redone_total") ?? 0) == redone,
                "the batch was not redone")
        }
    }

    /// Each command that asks gets who follows its visit after the batch (live activities, channels with an
    /// id), read in one statement for the whole batch; one that does not ask gets none.
    @Test func theFollowersOfABatchsVisitsAreReadForTheCommandsThatAsk() async throws {
        try await VisitFixtures.with { f in
            for v in ["v-f1", "v-f2", "v-f3"] { _ = try await f.schedule(v) }
            try await f.pool.withConnection { c in
                try c.execute(
                    script: """
                        INSERT INTO live_activities (visit_id, activity_id, push_token, environment, registered_at_ms, retired_at_ms)
                        VALUES ('v-f1', 'a', 'aa', 'sandbox', 1, NULL), ('v-f1', 'b', 'bb', 'sandbox', 1, NULL),
                               ('v-f1', 'c', 'cc', 'sandbox', 1, 2), ('v-f3', 'a', 'dd', 'sandbox', 1, NULL);
                        INSERT INTO channels (visit_id, environment, customer_id, target, channel_id, state, claimed_at)
                        VALUES ('v-f2', 'sandbox', 'c-1', 't-sandbox', 'ch-s', 'active', 1),
                               ('v-f2', 'production', 'c-1', 't-production', 'ch-p', 'active', 1),
                               ('v-f3', 'sandbox', 'c-1', 't-creating', NULL, 'creating', 1);
                        """)
            }
            var asking = [command("v-f1", try progress(4)), command("v-f2", try progress(5)), command("v-f3", try progress(6))]
            for i in asking.indices { asking[i].withFollowers = true }
            let batch = [asking[0], command("v-f2", try progress(3)), asking[1], asking[2]]
            let outcomes = try await f.pool.withConnection { c in f.handler.executeBatch(batch, on: c) }
            let followers = try outcomes.map { try $0.get().followers }
            #expect(followers.map { $0?.liveActivities } == [2, nil, 0, 1])
            #expect(followers[2]?.channels.map(\.channelId) == ["ch-p", "ch-s"], "by environment")
            #expect(followers[3]?.channels.isEmpty == true, "a channel being created has no id yet")
            // Alone, the same.
            let first = asking[0]
            let alone = try await f.pool.withConnection { c in try f.handler.execute(first, on: c) }
            #expect(alone.followers?.liveActivities == 2)
        }
    }

    @Test func aRefusedCommandFailsAloneInItsBatch() async throws {
        try await VisitFixtures.with { f in
            for v in ["v-ok1", "v-ok2", "v-bad"] { _ = try await f.schedule(v) }
            let finishing = try VisitEventRequest.parse(Array(#"{"type": "finishing"}"#.utf8))  // illegal from scheduled
            let outcomes = try await f.pool.withConnection { c in
                f.handler.executeBatch(
                    [command("v-ok1", try progress(3)), command("v-bad", finishing), command("v-ok2", try progress(4))], on: c)
            }
            #expect((try? outcomes[0].get())?.state.version == 2)
            #expect((try? outcomes[2].get())?.state.version == 2)
            #expect(throws: VisitDecisionError.self) { try outcomes[1].get() }
            #expect(try await f.handler.store.readStream("visit-v-bad").count == 1)
            #expect(try await f.rows()["v-bad"]?.version == 1)
        }
    }

    /// Commands on one hot visit in one batch: decided in order, each on the state the one before it left
    /// (a refused one in between leaves the state as it was), appended at consecutive positions in the
    /// batch's one transaction, each with its own answer; the read model ends at the last. A command with a
    /// `refuseIfAnyRow` read does not share its visit: it, and what follows it on that visit, runs alone after.
    @Test func aHotVisitsCommandsShareTheBatchInOrder() async throws {
        try await VisitFixtures.with { f in
            for v in ["v-hot", "v-cold"] { _ = try await f.schedule(v) }
            let enRoute = try VisitEventRequest.parse(Array(#"{"type": "enRoute", "kilometresAway": 8}"#.utf8))
            let finishing = try VisitEventRequest.parse(Array(#"{"type": "finishing"}"#.utf8))  // illegal before onSite
            var keyed = command("v-hot", try progress(1))
            keyed.refuseIfAnyRow = "SELECT 1 WHERE \(false)"
            var expectingFive = command("v-hot", try progress(0.5))
            expectingFive.context.expectedVersion = 5
            let batch = [
                command("v-hot", try progress(5)), command("v-cold", try progress(9)), command("v-hot", enRoute),
                command("v-hot", finishing), command("v-hot", try progress(2)), keyed, expectingFive,
            ]
            let redone = f.handler.store.metrics.value("livevisits_command_batches_redone_total") ?? 0
            let outcomes = try await f.pool.withConnection { c in f.handler.executeBatch(batch, on: c) }
            let results = outcomes.map { try? $0.get() }
            #expect(results.map { $0?.state.version } == [2, 2, 3, nil, 4, 5, 6])
            #expect(throws: VisitDecisionError.self) { try outcomes[3].get() }
            #expect(results[2]?.state.status == .enRoute)
            #expect(results[4]?.state.kilometresAway == 2)
            // Each answer is its own state's view, not the batch's last.
            for r in results.compactMap({ $0 }) {
                #expect(r.view == f.readModel.viewText(for: r.state))
            }
            #expect(results[0]?.view != results[4]?.view)
            #expect(
                f.handler.store.metrics.value("livevisits_command_batches_redone_total") ?? 0 == redone, "the batch was redone")

            let stream = try await f.handler.store.readStream("visit-v-hot")
            #expect(stream.map(\.position) == Array(1...6))
            // Versions 2-4 and the cold visit's event committed in one transaction; the keyed command alone.
            let batchTransaction = stream[1].transactionId
            #expect(stream[2].transactionId == batchTransaction && stream[3].transactionId == batchTransaction)
            #expect(try await f.handler.store.readStream("visit-v-cold")[1].transactionId == batchTransaction)
            #expect(stream[4].transactionId != batchTransaction)
            #expect(stream[5].transactionId != stream[4].transactionId)
            let rows = try await f.rows()
            #expect(rows["v-hot"]?.version == 6)
            #expect(rows["v-hot"]?.view == results[6]?.view)
            #expect(rows["v-cold"]?.version == 2)
        }
    }

    /// Through the batcher: many commands on one visit waiting together leave in few batches, in the order
    /// they came (each sees the version before it), and every one lands once.
    @Test func aHotVisitsWaitingCommandsLeaveTogether() async throws {
        try await VisitFixtures.with { f in
            _ = try await f.schedule("v-zipf")
            let batcher = VisitCommandBatcher(handler: f.handler, maxConcurrentBatches: 1)
            let before = batcher.batchesRun
            let results = try await withThrowingTaskGroup(of: VisitCommandResult.self) { group -> [VisitCommandResult] in
                for n in 0..<60 {
                    let event = try progress(Double(n))
                    group.addTask { try await batcher.execute(command("v-zipf", event)) }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(results.map(\.state.version).sorted() == Array(2...61))
            #expect(batcher.batchesRun - before < 60, "same-visit commands never shared a batch")
            let stream = try await f.handler.store.readStream("visit-v-zipf")
            #expect(stream.map(\.position) == Array(1...61))
            #expect(try await f.rows()["v-zipf"]?.version == 61)
        }
    }

    /// One batch forms at a time: commands that come while a batch still reads and decides wait until its writes
    /// go out, then leave together — not in a second batch formed beside it (two batches in flight are allowed).
    /// Here its turn to write is free at once, and they are on visits this process wrote: they join it.
    @Test func aBatchStillFormingHoldsTheNextUntilItsWritesGoOut() async throws {
        try await VisitFixtures.with { f in
            for v in ["v-slow", "v-next1", "v-next2"] { _ = try await f.schedule(v) }
            let batcher = VisitCommandBatcher(handler: f.handler, maxConcurrentBatches: 2)
            // Its state read takes 3 s: the batch is forming all that time.
            var slow = command("v-slow", try progress(2))
            slow.refuseIfAnyRow = "SELECT 1 FROM pg_sleep(3) AS s WHERE s::text = 'row'"
            let first = Task { [slow] in try await batcher.execute(slow) }
            try await eventually("the slow batch forming") { batcher.batchesRun == 1 && batcher.waitingCount == 0 }
            let next = try ["v-next1", "v-next2"].map { v in
                let event = try progress(3)
                return Task { try await batcher.execute(command(v, event)) }
            }
            // (Not taken by a second batch: they wait while the first forms. Bounded well inside its 3 s.) The batcher
            // decides whether a command starts a batch as it queues it, so once both wait with one batch run, no
            // second batch can form until the first one's writes go out.
            try await eventually("the next commands waiting", within: 2.5) { batcher.waitingCount == 2 }
            #expect(batcher.waitingCount == 2 && batcher.batchesRun == 1, "a second batch formed beside the first")
            #expect(try await first.value.state.version == 2)
            for task in next { #expect(try await task.value.state.version == 2) }
            #expect(batcher.batchesRun == 1, "the commands that waited did not join the batch as it wrote")
        }
    }

    /// One batch writes at a time (by default): a batch that forms while another writes reads and decides, then
    /// waits for that write's commit before sending its own; with two writes allowed it does not wait.
    @Test(arguments: [1, 2]) func aBatchWaitsForThePreviousOnesWriteToEnd(writes: Int) async throws {
        try await VisitFixtures.with { f in
            for v in ["v-writing", "v-next"] { _ = try await f.schedule(v) }
            let batcher = VisitCommandBatcher(handler: f.handler, maxConcurrentBatches: 2, maxConcurrentWrites: writes)
            // Its write (the statement it runs along) takes 3 s.
            var slow = command("v-writing", try progress(2))
            slow.alsoRun = { _ in ["SELECT pg_sleep(3)"] }
            let first = Task { [slow] in try await batcher.execute(slow) }
            try await eventually("the slow batch writing") { try await sleeping("SELECT pg_sleep(3)", in: f) }
            let next = Task { try await batcher.execute(command("v-next", try progress(3))) }
            try await eventually("the next batch formed beside the writing one", within: 2) { batcher.batchesRun == 2 }
            if writes == 1 {
                // (Bounded well inside the first write's 3 s.)
                try await eventually("the next batch waiting for its turn to write", within: 2) { batcher.waitingToWrite == 1 }
                #expect(try await sleeping("SELECT pg_sleep(3)", in: f), "the first write ended too soon for the check")
                #expect(try await f.rows()["v-next"]?.version == 1, "the next batch wrote while the first was writing")
            } else {
                try await eventually("the next batch written while the first writes", within: 2) {
                    try await f.rows()["v-next"]?.version == 2
                }
                #expect(try await f.rows()["v-writing"]?.version == 1)
            }
            #expect(try await first.value.state.version == 2)
            #expect(try await next.value.state.version == 2)
        }
    }

    /// Commands that join a batch late (`joining`: they came while it waited for its turn) are decided on the
    /// states this process committed last and written in the batch's transaction, after its own; one on a
    /// visit this process has not written, one on a visit already in the batch, and one that may not share its
    /// visit run alone after the batch — each in order, each with its own answer.
    @Test func commandsThatJoinABatchLateAreWrittenInItsTransaction() async throws {
        try await VisitFixtures.with { f in
            let visits = ["v-own", "v-hot", "v-late", "v-keyed", "v-cold"]
            for v in visits { _ = try await f.schedule(v) }
            // A process of its own that has written all but v-cold (version 2 each): it knows their states.
            let handler = VisitCommandHandler(
                store: f.handler.store, readModel: f.readModel, pushes: f.handler.pushes, clock: f.clock)
            for v in visits.dropLast() {
                _ = try await handler.post(visitId: v, event: try progress(1), context: VisitFixtures.dispatcher)
            }
            var keyed = command("v-keyed", try progress(6))
            keyed.refuseIfAnyRow = "SELECT 1 WHERE \(false)"
            let late = [
                command("v-hot", try progress(2)), command("v-hot", try progress(3)), command("v-late", try progress(4)),
                command("v-cold", try progress(5)), command("v-own", try progress(7)), keyed,
            ]
            let calls = Mutex(0)
            let outcomes = try await f.pool.withConnection { c in
                handler.executeBatch(
                    [command("v-own", try progress(8))], on: c,
                    joining: {
                        calls.withLock { $0 += 1 }
                        return late
                    })
            }
            #expect(calls.withLock { $0 } == 1)
            let versions = outcomes.map { (try? $0.get())?.state.version }
            #expect(versions == [3, 3, 4, 3, 2, 4, 3], "\(outcomes)")
            // The batch's own command and those decided on known states share its transaction; the others each had
            // one of their own, after it.
            let transactions = try await transactionsOfEvents(in: f)
            let batch = transactions["visit-v-own@3"]
            #expect(batch != nil)
            for at in ["visit-v-hot@3", "visit-v-hot@4", "visit-v-late@3"] { #expect(transactions[at] == batch, "\(at)") }
            for at in ["visit-v-cold@2", "visit-v-own@4", "visit-v-keyed@3"] {
                #expect(transactions[at] != nil && transactions[at] != batch, "\(at)")
            }
            #expect(try await f.rows()["v-hot"]?.version == 4)
        }
    }

    /// Bookings that come while a batch waits for its turn join it too: their visits' states and their
    /// customers' data keys are read in one round trip, and they are written in the batch's transaction, with
    /// an event that follows one of them. A booking of a visit that exists is refused, alone.
    @Test func bookingsThatJoinABatchLateAreReadTogetherAndWrittenInItsTransaction() async throws {
        try await VisitFixtures.with { f in
            let keys = PersonalDataKeys(current: nil)
            let handler = VisitCommandHandler(
                store: f.handler.store, readModel: f.readModel, pushes: f.handler.pushes, clock: f.clock, personalData: keys)
            for v in ["v-own", "v-taken"] { _ = try await f.schedule(v) }
            _ = try await handler.post(visitId: "v-own", event: try progress(1), context: VisitFixtures.dispatcher)
            func booking(_ visit: String, _ customer: String) throws -> VisitCommand {
                VisitCommand(
                    visitId: visit, event: .scheduled(try f.booking(visit, customer: customer)),
                    context: VisitFixtures.dispatcher, isCreation: true)
            }
            let late = [
                try booking("v-new1", "c-late"), try booking("v-new2", "c-late"), command("v-new1", try progress(3)),
                try booking("v-taken", "c-late"),
            ]
            #expect(late.map(VisitCommandHandler.joinsWithARead) == [true, true, false, true])
            let outcomes = try await f.pool.withConnection { c in
                handler.executeBatch([command("v-own", try progress(2))], on: c, joining: { late })
            }
            #expect(outcomes.prefix(4).map { (try? $0.get())?.state.version } == [3, 1, 1, 2], "\(outcomes)")
            #expect(throws: VisitDecisionError.self) { try outcomes[4].get() }
            let transactions = try await transactionsOfEvents(in: f)
            let batch = transactions["visit-v-own@3"]
            #expect(batch != nil)
            for at in ["visit-v-new1@1", "visit-v-new1@2", "visit-v-new2@1"] { #expect(transactions[at] == batch, "\(at)") }
            #expect(transactions["visit-v-taken@2"] == nil)
            let made = try await f.pool.withConnection { c in
                try c.query("SELECT key_id FROM personal_data_keys WHERE customer_id = 'c-late'").rows.map {
                    try $0.string("key_id")
                }
            }
            #expect(made.count == 1)
            for visit in ["v-new1", "v-new2"] {
                let data = try await f.handler.store.readStream("visit-\(visit)")[0].data
                #expect(data.contains("\"enc:v1:\(made[0]):"), "\(visit): \(data)")
            }
        }
    }

    /// Under load with one write at a time, commands that come while a batch waits for its turn leave with it
    /// (the joined counter moves), and every command lands once, in order on its visit.
    @Test func underLoadWaitingCommandsJoinTheBatchAboutToWrite() async throws {
        try await VisitFixtures.with { f in
            let visits = (0..<8).map { "v-j\($0)" }
            for v in visits { _ = try await f.schedule(v) }
            let batcher = VisitCommandBatcher(handler: f.handler, maxConcurrentBatches: 2, maxConcurrentWrites: 1)
            let joinedBefore = f.handler.store.metrics.value("livevisits_command_batch_joined_total") ?? 0
            // 16 writers, each posting 40 commands one after the other to two visits of its own pair.
            let results = try await withThrowingTaskGroup(of: [Int].self) { group -> [[Int]] in
                for w in 0..<16 {
                    let visit = visits[w % visits.count]
                    group.addTask {
                        var seen: [Int] = []
                        for n in 0..<40 {
                            seen.append(try await batcher.execute(command(visit, try progress(Double(n)))).state.version)
                        }
                        return seen
                    }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            for seen in results { #expect(seen == seen.sorted() && Set(seen).count == seen.count, "\(seen)") }
            for v in visits {
                let stream = try await f.handler.store.readStream("visit-\(v)")
                #expect(stream.map(\.position) == Array(1...81), "\(v)")
            }
            let joined = (f.handler.store.metrics.value("livevisits_command_batch_joined_total") ?? 0) - joinedBefore
            #expect(joined > 0, "no command joined a batch waiting for its turn in \(batcher.batchesRun) batches")
        }
    }

    /// A batch whose turn to write does not come within half the pool's work timeout gives up unwritten (a cancel
    /// sent while it waits would reach an idle connection and be lost): its commands answer unavailable, and the
    /// turn is not lost — the writer before it is cancelled at the timeout, and a later command writes.
    @Test func aBatchWhoseTurnDoesNotComeGivesUpUnwritten() async throws {
        try await VisitFixtures.with { f in
            for v in ["v-stuck", "v-waits"] { _ = try await f.schedule(v) }
            var configuration = f.pool.configuration
            configuration.workTimeoutSeconds = 8
            try await PostgresPool.withPool(configuration) { pool in
                let handler = VisitCommandHandler(
                    store: EventStore(pool: pool), readModel: f.readModel, pushes: CountingEnqueuer(), clock: f.clock)
                let batcher = VisitCommandBatcher(handler: handler, maxConcurrentBatches: 2)
                // Its write would take 12 s: the pool cancels it at 8 (the next batch gives up 4 s after it starts).
                var stuck = command("v-stuck", try progress(2))
                stuck.alsoRun = { _ in ["SELECT pg_sleep(12)"] }
                let first = Task { [stuck] in try await batcher.execute(stuck) }
                try await eventually("the stuck batch writing") { try await sleeping("SELECT pg_sleep(12)", in: f) }
                let waiting = Task { try await batcher.execute(command("v-waits", try progress(3))) }
                for task in [first, waiting] {
                    do {
                        _ = try await task.value
                        Issue.record("a command of a batch that could not write succeeded")
                    } catch let error as PostgresError {
                        #expect(error.isUnavailable)
                    }
                }
                do {
                    _ = try await waiting.value
                } catch let error as PostgresError {
                    #expect(error.message.contains("nothing of this one was written"), "\(error.message)")
                }
                #expect(try await f.rows()["v-stuck"]?.version == 1)
                #expect(try await f.rows()["v-waits"]?.version == 1)
                // The turns are all back: a later command writes.
                #expect(try await batcher.execute(command("v-waits", try progress(4))).state.version == 2)
            }
        }
    }

    /// A write cancelled (here by a `statement_timeout`; in production by the pool's work timeout) stops the
    /// batch: every command fails as unavailable (a 503, not a 500) and none is redone alone.
    @Test func aCancelledWriteStopsTheBatchUnavailable() async throws {
        try await VisitFixtures.with { f in
            for v in ["v-cancelled", "v-beside"] { _ = try await f.schedule(v) }
            let redoneBefore = f.handler.store.metrics.value("livevisits_command_batches_redone_total") ?? 0
            var cancelled = command("v-cancelled", try progress(2))
            cancelled.alsoRun = { _ in ["SELECT set_config('statement_timeout', '200', true)", "SELECT pg_sleep(3)"] }
            let handler = f.handler
            let outcomes = try await f.pool.withConnection { [cancelled] c in
                handler.executeBatch([cancelled, command("v-beside", try progress(3))], on: c)
            }
            for outcome in outcomes {
                #expect(throws: PostgresError.self) { try outcome.get() }
                if case .failure(let error as PostgresError) = outcome { #expect(error.isUnavailable, "\(error)") }
            }
            #expect(try await f.rows()["v-cancelled"]?.version == 1)
            #expect(try await f.rows()["v-beside"]?.version == 1)
            #expect(
                (f.handler.store.metrics.value("livevisits_command_batches_redone_total") ?? 0) == redoneBefore,
                "the batch was redone")
        }
    }

    /// A writer outside the batch takes a position the batch counted on: the batch's shared write fails on
    /// the unique index, nothing of it stands, and each command is run again alone on the new state.
    @Test func aBatchThatLosesARaceIsRedoneCommandByCommand() async throws {
        try await VisitFixtures.with { f in
            _ = try await f.schedule("v-race")
            _ = try await f.schedule("v-other")
            let handler = f.handler
            let redoneBefore = f.handler.store.metrics.value("livevisits_command_batches_redone_total") ?? 0
            // The outsider appends version 2 of v-race inside a transaction it keeps open until the batch
            // waits on its row.
            let held = try await holdOpen(f, appendingTo: "v-race")
            // The batch reads v-race at version 1 (the outsider has not committed), writes version 2, waits on
            // the outsider's row and then fails on the unique index.
            let outcomes = try await f.pool.withConnection { c in
                handler.executeBatch([command("v-race", try progress(2)), command("v-other", try progress(3))], on: c)
            }
            try await held.value
            let race = try outcomes[0].get()
            let other = try outcomes[1].get()
            #expect(race.state.version == 3)
            #expect(other.state.version == 2)
            #expect(try await f.handler.store.readStream("visit-v-race").map(\.position) == [1, 2, 3])
            #expect(try await f.handler.store.readStream("visit-v-other").map(\.position) == [1, 2])
            #expect(try await f.rows()["v-race"]?.version == 3)
            #expect(
                (f.handler.store.metrics.value("livevisits_command_batches_redone_total") ?? 0) > redoneBefore,
                "the batch was not redone")
        }
    }

    /// A command withdrawn by its caller (the HTTP server gave up) while it waits for a batch never runs.
    @Test func aCancelledWaitingCommandIsNeverRun() async throws {
        try await VisitFixtures.with { f in
            _ = try await f.schedule("v-stuck")
            _ = try await f.schedule("v-free")
            let batcher = VisitCommandBatcher(handler: f.handler, maxConcurrentBatches: 1)
            // The only batch runner gets stuck behind the outsider's open transaction on v-stuck, which stays
            // open until the waiting command was withdrawn.
            let release = DispatchSemaphore(value: 0)
            let held = try await holdOpen(f, appendingTo: "v-stuck", until: release)
            let stuck = Task { try await batcher.execute(command("v-stuck", try progress(2))) }
            // Wait until that batch waits in PostgreSQL on the outsider's lock — past the point where commands that
            // came meanwhile join it late (v-free's state is known here, so it could) — then queue a command behind it
            // and withdraw it while it waits.
            try await eventually("the first batch waiting on the outsider's lock") {
                let waiting = try await f.pool.query(CommandBatchTests.lockWaiters).first?.int("n")
                return batcher.batchesRun == 1 && (waiting ?? 0) > 0
            }
            let withdrawn = Task { try await batcher.execute(command("v-free", try progress(3))) }
            try await eventually("the second command waiting for a batch") { batcher.waitingCount == 1 }
            withdrawn.cancel()
            await #expect(throws: CancellationError.self) { try await withdrawn.value }
            #expect(batcher.waitingCount == 0)
            release.signal()
            try await held.value
            #expect(try await stuck.value.state.version == 3)
            // The next command on v-free runs in the next batch and finds the visit as scheduled: the withdrawn
            // one, queued before it, was never run.
            #expect(try await batcher.execute(command("v-free", try progress(4))).state.version == 2)
            #expect(try await f.handler.store.readStream("visit-v-free").count == 2, "a withdrawn command was appended")
            #expect(batcher.batchesRun == 2)
        }
    }

    /// An outsider: appends a progress event to `visit` in a transaction on a connection of its own, and
    /// keeps it open until another backend waits on a lock (the batch, on the outsider's row), then until
    /// `release` is signalled (if given). Returns once the event is in; await the task for the commit, which
    /// throws when no backend came to wait or `release` never came (within a minute each): then the race
    /// the test is about did not happen.
    func holdOpen(_ f: VisitFixtures, appendingTo visit: String, until release: DispatchSemaphore? = nil) async throws
        -> Task<Void, any Error>
    {
        let handler = f.handler
        let url = f.pool.configuration.url
        let started = WakeUp()
        let outsider = command(visit, try progress(9))
        let held = Task {
            try await PostgresPool.withPool(PostgresConfiguration(url: url, size: 1)) { holder in
                try await holder.withConnection { c in
                    try c.transaction { c in
                        _ = try handler.execute(outsider, on: c)
                        started.signal()
                        try CommandBatchTests.waitForALockWaiter(on: c)
                        if let release, release.wait(timeout: .now() + 60) == .timedOut {
                            throw WaitTimedOut(what: "the test to release the outsider", seconds: 60, location: #fileID)
                        }
                    }
                }
            }
        }
        guard await started.wait(upTo: 60) else {
            held.cancel()
            throw WaitTimedOut(what: "the outsider's append", seconds: 60, location: #fileID)
        }
        return held
    }

    /// How many other backends of this test's database wait on a lock (`n`). Only this database: tests running
    /// beside this one, on databases of their own in the same cluster, have lock waits of their own.
    static let lockWaiters: PostgresQuery = """
        SELECT count(*) AS n FROM pg_stat_activity
        WHERE datname = current_database() AND wait_event_type = 'Lock' AND pid <> pg_backend_pid()
        """

    /// Blocks (on the holder's own connection) until another backend waits on a lock; throws after 60 s.
    /// The holder polls inside its transaction, where PostgreSQL answers `pg_stat_activity` from the snapshot
    /// it took on the first read: each poll drops that snapshot, or a waiter that came later is never seen.
    static func waitForALockWaiter(on c: PostgresConnection) throws {
        let deadline = ContinuousClock.now + .seconds(60)
        while ContinuousClock.now < deadline {
            _ = try c.query("SELECT pg_stat_clear_snapshot()")
            if (try c.query(lockWaiters).first?.int("n") ?? 0) > 0 { return }
            Thread.sleep(forTimeInterval: 0.01)
        }
        throw WaitTimedOut(what: "a backend waiting on the outsider's lock", seconds: 60, location: #fileID)
    }
}
