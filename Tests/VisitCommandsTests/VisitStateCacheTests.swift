import Foundation
import Postgres
import Runtime
import TestSupport
import Testing
import VisitCommands
import VisitDomain
import VisitTestSupport

/// The states a handler's batches committed (`VisitStateCache`): the next command on such a visit is decided
/// on the remembered state, not on the snapshot read again — and only while the visit is still at that
/// state's version.
@Suite(.serialized, .timeLimit(.minutes(2))) struct VisitStateCacheTests {
    /// A second handler on the same database, with a cache of its own: another process.
    func otherProcess(_ f: VisitFixtures) -> VisitCommandHandler {
        VisitCommandHandler(store: f.handler.store, readModel: f.readModel, pushes: f.handler.pushes, clock: f.clock)
    }

    /// A scheduled visit whose last command (a progress, version 2) went through `f.handler`'s batches.
    func withVisitWrittenHere(_ visit: String, _ body: (VisitFixtures) async throws -> Void) async throws {
        try await VisitFixtures.with { f in
            _ = try await f.schedule(visit)
            _ = try await f.pool.withConnection { c in
                f.handler.executeBatch([try VisitFixtures.command(visit, #"{"type": "progress", "kilometresAway": 5}"#)], on: c)
            }
            #expect(f.handler.states.state(visit)?.version == 2)
            try await body(f)
        }
    }

    @Test func aCommittedStateDecidesTheNextCommandWithoutItsSnapshot() async throws {
        try await VisitFixtures.with { f in
            _ = try await f.schedule("v-c1")
            let first = try await f.pool.withConnection { c in
                f.handler.executeBatch([try VisitFixtures.command("v-c1", #"{"type": "progress", "kilometresAway": 5}"#)], on: c)
            }
            #expect((try? first[0].get())?.state.version == 2)
            #expect(f.handler.states.state("v-c1")?.version == 2, "the committed state is remembered")
            // The snapshot at that version now says the visit ended: a command decided on it would be refused.
            try await f.pool.withConnection { c in
                try c.execute(
                    script: """
                        UPDATE visits SET state = jsonb_set(state::jsonb, '{status}', '"completed"')::text WHERE visit_id = 'v-c1'
                        """)
            }
            let second = try await f.pool.withConnection { c in
                f.handler.executeBatch([try VisitFixtures.command("v-c1", #"{"type": "enRoute"}"#)], on: c)
            }
            #expect((try? second[0].get())?.state.version == 3, "decided on the remembered state: \(second[0])")
            #expect(f.handler.states.state("v-c1")?.status == .enRoute)
        }
    }

    /// Another process (a handler with its own cache) moves the visit on: the first one's remembered state is
    /// behind, so the read answers the snapshot and the command is decided on the visit as it is.
    @Test func aVisitWrittenElsewhereIsReadAgain() async throws {
        try await withVisitWrittenHere("v-c2") { f in
            let other = otherProcess(f)
            let moved = try await f.pool.withConnection { c in
                other.executeBatch([try VisitFixtures.command("v-c2", #"{"type": "onSite"}"#)], on: c)
            }
            #expect((try? moved[0].get())?.state.version == 3)
            // Legal from onSite only: decided on the remembered state (scheduled) it would be refused.
            let finishing = try await f.pool.withConnection { c in
                f.handler.executeBatch([try VisitFixtures.command("v-c2", #"{"type": "finishing"}"#)], on: c)
            }
            let result = try finishing[0].get()
            #expect(result.state.version == 4 && result.state.status == .finishing)
            #expect(f.handler.states.state("v-c2")?.version == 4)
        }
    }

    /// A remembered state that another process moved on is a lost bet: the batch decided on it fails on the
    /// position taken, is redone on the visit as it is, and no state is assumed for a while.
    @Test func aStateAssumedBehindTheVisitFailsItsBatchWhichIsRedone() async throws {
        try await VisitFixtures.with { f in
            _ = try await f.schedule("v-c4")
            _ = try await f.schedule("v-c5")
            let other = otherProcess(f)
            _ = try await f.pool.withConnection { c in
                f.handler.executeBatch(
                    [
                        try VisitFixtures.command("v-c4", #"{"type": "progress", "kilometresAway": 5}"#),
                        try VisitFixtures.command("v-c5", #"{"type": "progress", "kilometresAway": 5}"#),
                    ], on: c)
            }
            #expect(f.handler.states.assuming)
            _ = try await f.pool.withConnection { c in
                other.executeBatch([try VisitFixtures.command("v-c4", #"{"type": "progress", "kilometresAway": 4}"#)], on: c)
            }
            let redone = f.handler.store.metrics.value("livevisits_command_batches_redone_total") ?? 0
            let outcomes = try await f.pool.withConnection { c in
                f.handler.executeBatch(
                    [
                        try VisitFixtures.command("v-c4", #"{"type": "progress", "kilometresAway": 3}"#),
                        try VisitFixtures.command("v-c5", #"{"type": "progress", "kilometresAway": 3}"#),
                    ], on: c)
            }
            #expect(try outcomes[0].get().state.version == 4 && outcomes[1].get().state.version == 3)
            #expect((f.handler.store.metrics.value("livevisits_command_batches_redone_total") ?? 0) == redone + 1)
            #expect(!f.handler.states.assuming, "a lost bet: no state is assumed for a while")
            let stream = try await f.handler.store.readStream("visit-v-c4")
            #expect(stream.map(\.position) == [1, 2, 3, 4])
        }
    }

    /// A command refused on an assumed state (here its If-Match names the version another process reached)
    /// is decided again on the visit as read: no refusal stands on a state that was not read.
    @Test func aRefusalOnAnAssumedStateIsDecidedAgainOnTheVisitAsItIs() async throws {
        try await withVisitWrittenHere("v-c6") { f in
            let other = otherProcess(f)
            _ = try await f.pool.withConnection { c in
                other.executeBatch([try VisitFixtures.command("v-c6", #"{"type": "enRoute"}"#)], on: c)
            }
            var matching = try VisitFixtures.command("v-c6", #"{"type": "nearby", "kilometresAway": 1}"#)
            matching.context.expectedVersion = 3
            let batch = [matching]
            let outcomes = try await f.pool.withConnection { c in f.handler.executeBatch(batch, on: c) }
            let result = try outcomes[0].get()
            #expect(result.state.version == 4 && result.state.status == .nearby)
            #expect(f.handler.states.state("v-c6")?.version == 4)
            #expect(f.handler.states.assuming, "a refusal decided again is no lost bet")
        }
    }

    /// Two generations of `capacity / 2`: when the newer is full, the older is dropped — so a state written again
    /// lately (moved into the newer generation) stays, the state untouched longest goes, and the states in use
    /// are never all dropped at once.
    @Test func aFullCacheDropsItsOlderGeneration() async throws {
        try await VisitFixtures.with { f in
            let small = VisitCommandHandler(
                store: f.handler.store, readModel: f.readModel, pushes: f.handler.pushes, clock: f.clock,
                states: VisitStateCache(capacity: 4))
            for v in ["v-s1", "v-s2", "v-s3", "v-s4"] { _ = try await f.schedule(v) }
            var km = 5.0
            for v in ["v-s1", "v-s2", "v-s3", "v-s1", "v-s4"] {
                km += 1
                _ = try await f.pool.withConnection { [km] c in
                    small.executeBatch([try VisitFixtures.command(v, #"{"type": "progress", "kilometresAway": \#(km)}"#)], on: c)
                }
            }
            #expect(small.states.state("v-s2") == nil, "the state untouched longest went with the older generation")
            #expect(small.states.state("v-s1")?.version == 3, "written again lately, it stayed")
            #expect(small.states.state("v-s3")?.version == 2 && small.states.state("v-s4")?.version == 2)
            #expect(small.states.count == 3)
        }
    }
}
