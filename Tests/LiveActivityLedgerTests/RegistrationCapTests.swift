import Foundation
import LiveActivityLedger
import Postgres
import Runtime
import TestSupport
import Testing

/// The caps' check is race-safe (contract §15): a registration at a visit's (or customer's) last place holds
/// the visit's (customer's) advisory lock until its transaction ends, so a concurrent one waits for it and
/// then counts what it registered, instead of both passing at 19 (49).
@Suite(.timeLimit(.minutes(3))) struct RegistrationCapTests {
    let tokens = TokenRegistry(clock: ManualClock(now: 1_790_000_000))
    let token = String(repeating: "ab", count: 32)

    /// Whether a session of this database waits on an advisory lock.
    func someoneWaitsOnAnAdvisoryLock(_ pool: PostgresPool) async throws -> Bool {
        try await pool.withConnection { c in
            try c.query(
                """
                SELECT count(*) AS n FROM pg_stat_activity
                WHERE datname = current_database() AND wait_event_type = 'Lock' AND wait_event = 'advisory'
                """
            ).first?.int("n") ?? 0 > 0
        }
    }

    /// Runs `first` in a transaction held open until `second`, in its own transaction, waits on the lock; then
    /// commits `first` and returns how `second` ended.
    func race(
        _ pool: PostgresPool, first: @escaping @Sendable (PostgresConnection) throws -> Void,
        second: @escaping @Sendable (PostgresConnection) throws -> Void
    ) async throws -> Result<Void, any Error> {
        let firstDone = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        let holder = Task {
            try await pool.withTransaction { c in
                try first(c)
                firstDone.signal()
                // The connection's own thread, not the cooperative pool: waiting here holds the transaction.
                _ = release.wait(timeout: .now() + 30)
            }
        }
        try await onOwnThread { _ = firstDone.wait(timeout: .now() + 30) }
        let waiter = Task { () -> Result<Void, any Error> in
            do {
                try await pool.withTransaction { try second($0) }
                return .success(())
            } catch {
                return .failure(error)
            }
        }
        var waited = false
        do {
            try await eventually("the second registration waits on the first's advisory lock", within: 20) {
                try await someoneWaitsOnAnAdvisoryLock(pool)
            }
            waited = true
        } catch {
            Issue.record(error)
        }
        release.signal()
        try await holder.value
        let outcome = await waiter.value
        #expect(waited)
        return outcome
    }

    @Test func twoActivitiesAtTheLastPlaceOneWaitsAndIsRefused() async throws {
        try await withTestDatabase(poolSize: 4) { _, pool in
            try await pool.withTransaction { c in
                for n in 1...19 {
                    try tokens.registerLiveActivity(
                        visitId: "v-1", activityId: "a-\(n)", pushToken: token, environment: .sandbox, on: c)
                }
            }
            let outcome = try await race(
                pool,
                first: { c in
                    try tokens.admitLiveActivity(visitId: "v-1", activityId: "x-1", deviceId: nil, on: c)
                    try tokens.registerLiveActivity(
                        visitId: "v-1", activityId: "x-1", pushToken: token, environment: .sandbox, on: c)
                },
                second: { c in
                    try tokens.admitLiveActivity(visitId: "v-1", activityId: "x-2", deviceId: nil, on: c)
                    try tokens.registerLiveActivity(
                        visitId: "v-1", activityId: "x-2", pushToken: token, environment: .sandbox, on: c)
                })
            if case .failure(let error as LedgerError) = outcome {
                #expect(error.code == .tooManyActivities)
            } else {
                Issue.record("the second activity was admitted: \(outcome)")
            }
            #expect(try await pool.withConnection { try tokens.liveActivityCount(visitId: "v-1", on: $0) } == 20)
        }
    }

    @Test func twoDevicesAtTheLastPlaceOneWaitsAndIsRefused() async throws {
        try await withTestDatabase(poolSize: 4) { _, pool in
            try await pool.withTransaction { c in
                for n in 1...49 {
                    try tokens.registerPushToStart(
                        customerId: "c-1", deviceId: "d-\(n)", pushToken: token, environment: .sandbox, on: c)
                }
            }
            let outcome = try await race(
                pool,
                first: { c in
                    try tokens.admitDevice(customerId: "c-1", deviceId: "x-1", on: c)
                    try tokens.register(
                        .notificationDevice(customerId: "c-1", deviceId: "x-1"), pushToken: token, environment: .sandbox,
                        on: c)
                },
                second: { c in
                    try tokens.admitDevice(customerId: "c-1", deviceId: "x-2", on: c)
                    try tokens.registerPushToStart(
                        customerId: "c-1", deviceId: "x-2", pushToken: token, environment: .sandbox, on: c)
                })
            if case .failure(let error as LedgerError) = outcome {
                #expect(error.code == .tooManyDevices)
            } else {
                Issue.record("the second device was admitted: \(outcome)")
            }
        }
    }
}
