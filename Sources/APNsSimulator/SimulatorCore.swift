import Foundation
import JSON
import Runtime

/// The simulator's decisions and records: validation, faults and the delivery log, guarded by one
/// lock. Connection threads call in; nothing here blocks or does I/O (apart from `onDelivery`,
/// called after the lock is released).
final class SimulatorCore: Sendable {
    struct State {
        var deliveries: [SimulatedDelivery] = []
        var nextSequence = 1
        var plan = FaultPlan()
        var connectionsAccepted = 0
        var connectionsOpen = 0
        var maximumConcurrentStreams = 0
        var requestsTotal = 0
        /// Broadcast channels by id (`SimulatorCore+Channels`), with the plan of the management listener.
        var channels = SimulatedChannels()
        var channelPlan = FaultPlan()
    }

    let configuration: SimulatorConfiguration
    let validator: PushValidator
    let state = Lock(State())

    init(configuration: SimulatorConfiguration) throws(SimulatorError) {
        self.configuration = configuration
        let verifier = try ProviderTokenVerifier(
            keys: configuration.providerKeys, lifetime: configuration.providerTokenLifetime,
            futureTolerance: configuration.providerTokenFutureTolerance)
        validator = PushValidator(
            verifier: verifier, expectedTopic: configuration.expectedTopic,
            maximumPayloadSize: configuration.maximumPayloadSize)
    }

    var verifiesSignatures: Bool { !validator.verifier.acceptsAnySignature }

    // MARK: Requests

    /// Decides the answer to one complete request.
    func plan(for request: ReceivedRequest) -> ResponsePlan {
        if request.path.hasPrefix("/_sim/") { return controlPlan(for: request) }
        if request.listener == .channels { return channelManagementPlan(for: request) }
        let now = request.receivedAt
        let tokenID = request.header("authorization").map { Logger.fingerprint($0) + String($0.utf8.count) }
        let decided = state.withLock { s -> (FaultPlan.Decision, Int) in
            s.requestsTotal += 1
            defer { s.nextSequence += 1 }
            return (s.plan.decide(providerTokenID: tokenID), s.nextSequence)
        }
        let decision = decided.0
        let sequence = decided.1
        var verdict: PushVerdict
        if let failure = decision.failure {
            // An injected failure still reports what the token said.
            verdict = validator.validate(request, now: now)
            verdict.status = failure.status
            verdict.reason = failure.reason
        } else {
            verdict = validator.validate(request, now: now)
        }
        let apnsID =
            request.header("apns-id").flatMap { PushValidator.isUUID($0) ? $0.lowercased() : nil }
            ?? UUID().uuidString.lowercased()
        var unregisteredAt: Int64?
        if verdict.status == 200, let token = request.deviceToken,
            let at = state.withLock({ $0.plan.unregisteredTimestamp(token: token) })
        {
            verdict.status = 410
            verdict.reason = SimulatorReason.unregistered
            unregisteredAt = at
        }
        if decision.failure?.status == 410 { unregisteredAt = Int64(now * 1000) }
        // A broadcast to a channel this simulator does not hold (never created, deleted, or forgotten by
        // a fault) is answered as Apple does: 404 ChannelNotRegistered.
        if verdict.status == 200, request.broadcastBundle != nil, let channel = request.header("apns-channel-id"),
            !state.withLock({ $0.channels.contains(channel) })
        {
            verdict.status = 404
            verdict.reason = SimulatorReason.channelNotRegistered
        }
        // Apple's development environment answers an accepted push with an id of its own, for looking it up
        // in the Push Notifications Console; production does not.
        let uniqueID = request.listener == .sandboxPushes && verdict.status == 200 ? UUID().uuidString.lowercased() : nil
        let record = SimulatedDelivery(
            sequence: sequence, receivedAt: now, connectionID: request.connectionID, streamID: request.streamID,
            method: request.method, path: request.path, deviceToken: request.deviceToken,
            headers: request.headers.filter { $0.name != "authorization" },
            providerToken: verdict.providerToken,
            payload: String(decoding: request.body, as: UTF8.self), payloadSize: request.bodySize,
            json: verdict.json, status: verdict.status, reason: verdict.reason, apnsID: apnsID,
            unregisteredTimestamp: unregisteredAt, answered: false, uniqueID: uniqueID)
        if let mode = decision.drop {
            var dropped = record
            dropped.status = 0
            dropped.reason = SimulatorReason.connectionDropped
            return ResponsePlan(action: .drop(mode), delay: 0, record: dropped)
        }
        var headers: [(String, String)] = [("apns-id", apnsID)]
        if let uniqueID { headers.append(("apns-unique-id", uniqueID)) }
        var body: [UInt8] = []
        if let reason = verdict.reason {
            headers.append(("content-type", "application/json"))
            var answer = [JSONMember("reason", .string(reason))]
            if let at = unregisteredAt { answer.append(JSONMember("timestamp", .number(Double(at)))) }
            body = JSONValue.object(answer).serialized()
        }
        return ResponsePlan(
            action: .answer(status: verdict.status, headers: headers, body: body), delay: decision.latency,
            record: record)
    }

    /// Records a complete request that will never be decided (its connection went away first),
    /// without consuming any fault.
    func recordUnanswered(_ request: ReceivedRequest, reason: String) {
        let sequence = state.withLock { s -> Int in
            s.requestsTotal += 1
            defer { s.nextSequence += 1 }
            return s.nextSequence
        }
        store(
            SimulatedDelivery(
                sequence: sequence, receivedAt: request.receivedAt, connectionID: request.connectionID,
                streamID: request.streamID, method: request.method, path: request.path, deviceToken: request.deviceToken,
                headers: request.headers.filter { $0.name != "authorization" }, providerToken: nil,
                payload: String(decoding: request.body, as: UTF8.self), payloadSize: request.bodySize,
                json: try? JSONValue.parse(request.body), status: 0, reason: reason,
                apnsID: request.header("apns-id") ?? "", unregisteredTimestamp: nil, answered: false))
    }

    /// Stores a record once its fate is known.
    func store(_ finished: SimulatedDelivery) {
        var record = finished
        record.answeredAt = configuration.clock.now()
        let limit = max(1, configuration.maximumRecordedDeliveries)
        state.withLock { s in
            s.deliveries.append(record)
            if s.deliveries.count > limit { s.deliveries.removeFirst(max(s.deliveries.count - limit, limit / 10)) }
        }
        configuration.onDelivery?(record)
        guard Logger.minimumLevel.withLock({ $0 }) <= .debug else { return }
        configuration.logger.debug(
            "push recorded",
            [
                "apns.status": String(record.status), "apns.reason": record.reason ?? "-",
                "apns.token": record.deviceToken.map(Logger.fingerprint) ?? "-", "apns.id": record.apnsID,
            ])
    }

    // MARK: Faults, records, counters

    func apply(_ faults: FaultSettings) {
        let nowMilliseconds = Int64(configuration.clock.now() * 1000)
        state.withLock { s in
            switch faults.listener ?? .pushes {
            case .pushes, .sandboxPushes: s.plan.apply(faults, nowMilliseconds: nowMilliseconds)
            case .channels: s.channelPlan.apply(faults, nowMilliseconds: nowMilliseconds)
            }
            if faults.clear == true { s.channels.limit = SimulatedChannels.appleLimit }
            if let limit = faults.channelLimit { s.channels.limit = max(0, limit) }
            for id in faults.forgetChannels ?? [] { s.channels.remove(id) }
        }
    }

    func deliveries() -> [SimulatedDelivery] {
        state.withLock { s in s.deliveries.sorted { $0.sequence < $1.sequence } }
    }

    func reset() {
        state.withLock { s in
            s.deliveries.removeAll()
            s.plan = FaultPlan()
            s.channelPlan = FaultPlan()
            s.channels = SimulatedChannels()
            s.maximumConcurrentStreams = 0
        }
    }

    func connectionOpened() -> Int {
        state.withLock { s in
            s.connectionsAccepted += 1
            s.connectionsOpen += 1
            return s.connectionsAccepted
        }
    }

    func connectionClosed() { state.withLock { $0.connectionsOpen -= 1 } }

    func observeConcurrentStreams(_ count: Int) {
        state.withLock { s in s.maximumConcurrentStreams = max(s.maximumConcurrentStreams, count) }
    }

    func statistics() -> SimulatorStatistics {
        state.withLock { s in
            SimulatorStatistics(
                connectionsAccepted: s.connectionsAccepted, connectionsOpen: s.connectionsOpen,
                maximumConcurrentStreams: s.maximumConcurrentStreams, requestsTotal: s.requestsTotal)
        }
    }
}
