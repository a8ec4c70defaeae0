import APNs
import APNsSimulator
import Foundation
import JSON
import Outbox
import OutboxAPNs
import PersonalData
import Postgres
import Runtime
import TestSupport
import Testing

/// `PUT /v1/visits/{id}/channel` and the channel's broadcasts, for real: the API, the outbox worker and the
/// APNs client in-process against the project's simulator (HTTP/2 over TLS, ES256), on real PostgreSQL.
@Suite(.serialized, .timeLimit(.minutes(5))) struct ChannelRouteTests {
    /// The API with channels, a worker and the APNs client against a fresh simulator.
    struct Harness {
        let simulator: APNsSimulator
        let client: APNsClient
        let api: APIServer
        let worker: OutboxWorker
        let service: APNsChannelService
        let configuration: OutboxConfiguration

        static func start(
            databaseURL: String? = nil, maximumChannels: Int = ChannelStore.defaultMaximumChannels,
            configure: (inout OutboxConfiguration) -> Void = { _ in }
        ) async throws -> Harness {
            let pem = try SimulatorDeliveryTests.signingKeyPEM()
            var settings = SimulatorConfiguration()
            settings.providerKeys = [
                ProviderKey(teamID: SimulatorDeliveryTests.teamID, keyID: SimulatorDeliveryTests.keyID, publicKeyPEM: pem)
            ]
            settings.bundleID = SimulatorDeliveryTests.bundleID
            settings.logger = Logger(label: "apns-sim-test")
            let simulator = try APNsSimulator(configuration: settings)
            let endpoint = try await simulator.start()
            var apns = APNsConfiguration(
                baseURLs: [.sandbox: endpoint.url, .production: endpoint.url],
                trustedCertificates: try APNsTrustedCertificates(contentsOfFile: endpoint.caFile),
                signingKey: try APNsSigningKey(pem: Array(pem.utf8)), keyId: SimulatorDeliveryTests.keyID,
                teamId: SimulatorDeliveryTests.teamID, bundleId: SimulatorDeliveryTests.bundleID)
            apns.channelsBaseURLs = [.sandbox: endpoint.channelsURL, .production: endpoint.channelsURL]
            let client = APNsClient(configuration: apns, metrics: Metrics())
            let service = APNsChannelService(client: client)
            var configuration = OutboxConfiguration()
            configure(&configuration)
            let api = try await APIServer.start(
                databaseURL: databaseURL, channelService: service, maximumChannels: maximumChannels,
                outboxConfiguration: configuration)
            // As `livevisits serve` wires it: sealed tokens and bodies are opened at send time.
            let sender = SealedPushSender(
                inner: APNsPushSender(client: client), keys: api.environment.personalData, pool: api.pool,
                cache: api.environment.dataKeyCache)
            let worker = OutboxWorker(pool: api.pool, sender: sender, configuration: configuration, metrics: Metrics())
            return Harness(
                simulator: simulator, client: client, api: api, worker: worker, service: service,
                configuration: configuration)
        }

        var lifecycle: ChannelLifecycle {
            ChannelLifecycle(pool: api.pool, service: service, configuration: configuration, metrics: Metrics())
        }

        func creates() -> [SimulatedDelivery] {
            simulator.deliveries().filter { $0.method == "POST" && $0.path.hasSuffix("/channels") }
        }

        func broadcasts(to channel: String) -> [SimulatedDelivery] {
            simulator.deliveries().filter { $0.path.hasPrefix("/4/broadcasts/") && $0.header("apns-channel-id") == channel }
        }

        func delivered(to token: String) -> [SimulatedDelivery] {
            simulator.deliveries().filter { $0.deviceToken?.lowercased() == token }
        }

        /// Runs the worker until `done` holds.
        func drain(_ what: String, until done: () throws -> Bool) async throws {
            try await eventually(what, within: 30, pollingEvery: 0.025) {
                _ = try await worker.runOnce()
                return try done()
            }
        }

        func stop() async {
            await client.shutdown()
            await api.stop()
            await simulator.stop()
        }

        /// Lends a started harness (see `start`) to `body` and stops it once `body` has returned or thrown.
        static func with<Result>(
            databaseURL: String? = nil, maximumChannels: Int = ChannelStore.defaultMaximumChannels,
            configure: (inout OutboxConfiguration) -> Void = { _ in },
            _ body: (Harness) async throws -> Result
        ) async throws -> Result {
            try await withResource(
                { try await start(databaseURL: databaseURL, maximumChannels: maximumChannels, configure: configure) },
                close: { await $0.stop() }, body)
        }
    }

    static func channelId(_ response: RawResponse) -> String? {
        (try? JSONValue.parse(response.body))?["channelId"]?.stringValue
    }

    static func listedChannels(_ response: RawResponse) -> [String] {
        ((try? JSONValue.parse(response.body))?["channels"]?.arrayElements ?? []).compactMap { $0["channelId"]?.stringValue }
    }

    @Test func theFirstPutCreatesTheChannelAndEveryLaterOneAnswersTheSameId() async throws {
        try await Harness.with { h in
            let api = h.api
            let visit = uniqueID("v")
            let customer = uniqueID("c")
            #expect(try await api.schedule(visit, customer: customer).status == 201)
            let customerKey = try await api.key(.customer, customer)
            let first = try await api.call(
                "PUT", "/v1/visits/\(visit)/channel", key: customerKey, json: #"{"environment":"production"}"#)
            #expect(first.status == 200, "\(first.text)")
            let id = try #require(Self.channelId(first))
            #expect(first.text == #"{"channelId":"\#(id)","environment":"production"}"#)
            for key in [customerKey, api.dispatcher, api.ops] {
                let again = try await api.call(
                    "PUT", "/v1/visits/\(visit)/channel", key: key, json: #"{"environment":"production"}"#)
                #expect(again.status == 200 && Self.channelId(again) == id)
            }
            let sandbox = try await api.call(
                "PUT", "/v1/visits/\(visit)/channel", key: customerKey, json: #"{"environment":"sandbox"}"#)
            let sandboxId = try #require(Self.channelId(sandbox))
            let read = try await api.call("GET", "/v1/visits/\(visit)", key: customerKey)
            let creates = h.creates()
            // Creating sends nothing: its first broadcast is the visit's next state change.
            let broadcasts = h.simulator.deliveries().filter { $0.path.hasPrefix("/4/") }
            await h.stop()
            #expect(creates.count == 2)
            #expect(sandboxId != id)
            #expect(
                read.text.hasSuffix(
                    #","liveActivities":0,"channels":[{"channelId":"\#(id)","environment":"production"},{"channelId":"\#(sandboxId)","environment":"sandbox"}]}"#
                ), "\(read.text)")
            #expect(broadcasts.isEmpty)
        }
    }

    @Test func concurrentPutsOnTwoServersAndPoolsMakeOneCreateAndOneId() async throws {
        try await Harness.with { h in
            // A second API on the same database with its own pool, and APNs slow to answer the create, so the
            // requests really overlap the creation.
            try await withAPIServer(databaseURL: h.api.databaseURL, channelService: h.service) { other in
                let visit = uniqueID("v")
                let customer = uniqueID("c")
                #expect(try await h.api.schedule(visit, customer: customer).status == 201)
                let key = try await h.api.key(.customer, customer)
                h.simulator.inject(FaultSettings(latency: .init(milliseconds: 400, count: 1), listener: .channels))
                let ids = try await withThrowingTaskGroup(of: (Int, String?).self) { group in
                    for n in 0..<12 {
                        let server = n % 2 == 0 ? h.api : other
                        group.addTask {
                            let r = try await server.call(
                                "PUT", "/v1/visits/\(visit)/channel", key: key, json: #"{"environment":"sandbox"}"#)
                            return (r.status, Self.channelId(r))
                        }
                    }
                    var out: [(Int, String?)] = []
                    for try await r in group { out.append(r) }
                    return out
                }
                let creates = h.creates()
                let held = h.simulator.channels()
                await other.stop()
                await h.stop()
                #expect(ids.allSatisfy { $0.0 == 200 })
                #expect(Set(ids.compactMap(\.1)).count == 1 && ids.compactMap(\.1).count == 12)
                #expect(creates.count == 1)
                #expect(held == [ids[0].1].compactMap { $0 })
            }
        }
    }

    @Test func badInputIsATypedRefusalAndCreatesNothingAtAPNs() async throws {
        try await Harness.with { h in
            let api = h.api
            let visit = uniqueID("v")
            let customer = uniqueID("c")
            #expect(try await api.schedule(visit, customer: customer, technician: "t-9").status == 201)
            let customerKey = try await api.key(.customer, customer)
            let stranger = try await api.key(.customer, uniqueID("c"))
            let technician = try await api.key(.technician, "t-9")
            let path = "/v1/visits/\(visit)/channel"
            let cases: [(String?, String?, Int, String)] = [
                (nil, #"{"environment":"sandbox"}"#, 401, "unauthorized"),
                (technician, #"{"environment":"sandbox"}"#, 403, "forbidden"),
                (stranger, #"{"environment":"sandbox"}"#, 404, "not_found"),
                (customerKey, #"{"environment":"staging"}"#, 422, "invalid_value"),
                (customerKey, #"{"environment":1}"#, 422, "invalid_value"),
                (customerKey, "{}", 422, "missing_field"),
                (customerKey, #"{"environment":"sandbox","extra":true}"#, 422, "unknown_field"),
                (customerKey, "not json", 400, "malformed_json"),
                (customerKey, "[]", 422, "wrong_type"),
            ]
            var answers: [(Int, String?)] = []
            for (key, body, _, _) in cases {
                let r = try await api.call("PUT", path, key: key ?? "", json: body)
                answers.append((r.status, (try? JSONValue.parse(r.body))?["error"]?["code"]?.stringValue))
            }
            let unknownVisit = try await api.call(
                "PUT", "/v1/visits/\(uniqueID("v"))/channel", key: api.dispatcher, json: #"{"environment":"sandbox"}"#)
            #expect(try await api.post(visit, #"{"type":"cancelled","reason":"no longer needed"}"#).status == 201)
            let ended = try await api.call("PUT", path, key: customerKey, json: #"{"environment":"sandbox"}"#)
            let creates = h.creates()
            await h.stop()
            for (index, expected) in cases.enumerated() {
                #expect(answers[index].0 == expected.2, "case \(index): \(answers[index])")
                #expect(answers[index].1 == expected.3 || expected.2 == 422 && answers[index].1 != nil, "case \(index)")
            }
            #expect(unknownVisit.status == 404)
            #expect(ended.status == 409 && ended.text.contains(#""code":"visit_ended""#))
            #expect(creates.isEmpty)
        }
    }

    @Test func theFleetLimitAndAPNsRefusalAnswer409ChannelsExhausted() async throws {
        try await Harness.with(maximumChannels: 1) { h in
            let api = h.api
            var visits: [String] = []
            for _ in 0..<3 {
                let v = uniqueID("v")
                #expect(try await api.schedule(v).status == 201)
                visits.append(v)
            }
            let body = #"{"environment":"sandbox"}"#
            let first = try await api.call("PUT", "/v1/visits/\(visits[0])/channel", key: api.dispatcher, json: body)
            let overFleet = try await api.call("PUT", "/v1/visits/\(visits[1])/channel", key: api.dispatcher, json: body)
            // Production has room in the fleet, but APNs refuses (its limit reached).
            h.simulator.setChannelLimit(1)
            let overAPNs = try await api.call(
                "PUT", "/v1/visits/\(visits[2])/channel", key: api.dispatcher, json: #"{"environment":"production"}"#)
            let rows = try await api.pool.withConnection { c in try c.query("SELECT count(*) AS n FROM channels").first?.int("n")
            }
            let creates = h.creates()
            await h.stop()
            #expect(first.status == 200)
            #expect(overFleet.status == 409 && overFleet.text.contains(#""code":"channels_exhausted""#))
            #expect(overAPNs.status == 409 && overAPNs.text.contains(#""code":"channels_exhausted""#))
            #expect(rows == 1)
            #expect(creates.count == 2)
        }
    }

    @Test func aChannelsBroadcastsAreTheTokenPushesOfTheVisitNeverAStart() async throws {
        try await Harness.with { h in
            let api = h.api
            let visit = uniqueID("v")
            let customer = uniqueID("c")
            #expect(try await api.schedule(visit, customer: customer).status == 201)
            let key = try await api.key(.customer, customer)
            let token = pushToken("\(visit)-phone")
            let registration = #"{"pushToken":"\#(token)","environment":"sandbox","version":1}"#
            #expect(
                try await api.call("PUT", "/v1/visits/\(visit)/live-activities/a-1", key: key, json: registration).status == 204)
            let channel = try #require(
                Self.channelId(
                    try await api.call("PUT", "/v1/visits/\(visit)/channel", key: key, json: #"{"environment":"sandbox"}"#)))
            // One state change at a time, each delivered before the next (a newer state supersedes an undelivered one).
            for (n, event) in [
                #"{"type":"enRoute","kilometresAway":9.5}"#, #"{"type":"nearby","kilometresAway":1.2}"#, #"{"type":"onSite"}"#,
                #"{"type":"finishing"}"#, #"{"type":"completed"}"#,
            ].enumerated() {
                #expect(try await api.post(visit, event).status == 201)
                try await h.drain("state change \(n + 1) broadcast and pushed") {
                    h.broadcasts(to: channel).filter(\.accepted).count == n + 1
                        && h.delivered(to: token).filter(\.accepted).count == n + 1
                }
            }
            let broadcasts = h.broadcasts(to: channel)
            let pushes = h.delivered(to: token)
            let state = try await api.pool.withConnection { c in
                try c.query("SELECT state FROM channels WHERE channel_id = \(channel)").first?.string("state")
            }
            await h.stop()
            func shape(_ d: SimulatedDelivery) -> String {
                let aps = d.json?["aps"]
                let parts: [JSONValue?] = [
                    aps?["event"], aps?["content-state"], aps?["timestamp"], aps?["dismissal-date"], aps?["stale-date"],
                ]
                return parts.map { $0?.serializedString() ?? "-" }.joined(separator: " ")
            }
            #expect(broadcasts.map { shape($0) } == pushes.map { shape($0) })
            #expect(broadcasts.map(\.payload) == pushes.map(\.payload))
            #expect(broadcasts.allSatisfy { $0.json?["aps"]?["event"]?.stringValue != "start" })
            #expect(broadcasts.last?.json?["aps"]?["event"]?.stringValue == "end")
            let stamps = broadcasts.compactMap { $0.json?["aps"]?["timestamp"]?.integerValue }
            #expect(stamps.count == 5 && zip(stamps, stamps.dropFirst()).allSatisfy { $0 < $1 })
            #expect(broadcasts.map { $0.header("apns-priority") } == pushes.map { $0.header("apns-priority") })
            #expect(Set(broadcasts.map { $0.header("apns-id") }).count == 5)
            #expect(state == "ended")
        }
    }

    @Test func channelNotRegisteredForgetsTheChannelAndALaterPutCreatesANewOne() async throws {
        try await Harness.with { h in
            let api = h.api
            let visit = uniqueID("v")
            #expect(try await api.schedule(visit).status == 201)
            let body = #"{"environment":"production"}"#
            let first = try #require(
                Self.channelId(try await api.call("PUT", "/v1/visits/\(visit)/channel", key: api.dispatcher, json: body)))
            h.simulator.forgetChannels([first])
            #expect(try await api.post(visit, #"{"type":"enRoute"}"#).status == 201)
            try await h.drain("the broadcast answered ChannelNotRegistered") {
                h.broadcasts(to: first).contains { $0.reason == "ChannelNotRegistered" }
            }
            try await eventually("the channel is forgotten") {
                try await api.pool.withConnection { c in try c.query("SELECT 1 FROM channels").isEmpty }
            }
            #expect(try await api.post(visit, #"{"type":"nearby","kilometresAway":1.0}"#).status == 201)
            for _ in 0..<3 { _ = try await h.worker.runOnce() }
            let listed = Self.listedChannels(try await api.call("GET", "/v1/visits/\(visit)", key: api.dispatcher))
            let second = Self.channelId(try await api.call("PUT", "/v1/visits/\(visit)/channel", key: api.dispatcher, json: body))
            let states = try await api.pool.withConnection { c in
                try c.query("SELECT state, attempts FROM deliveries WHERE target LIKE 'channel%' ORDER BY id").rows.map {
                    "\(try $0.string("state"))/\(try $0.int("attempts"))"
                }
            }
            let attempts = h.broadcasts(to: first).count
            await h.stop()
            #expect(listed.isEmpty)
            #expect(second != nil && second != first)
            #expect(attempts == 1)  // no retry
            #expect(states == ["cancelled/1"])  // the nearby found no channel: nothing enqueued for it
        }
    }

    @Test func theChannelIsDeletedAtAPNsAfterTheAcknowledgedEnd() async throws {
        try await Harness.with(configure: { $0.channelDeleteAfterEndSeconds = 0 }) { h in
            let api = h.api
            let visit = uniqueID("v")
            #expect(try await api.schedule(visit).status == 201)
            let channel = try #require(
                Self.channelId(
                    try await api.call(
                        "PUT", "/v1/visits/\(visit)/channel", key: api.dispatcher, json: #"{"environment":"sandbox"}"#)))
            // Not before the end: an active channel is not due.
            #expect(try await h.lifecycle.deleteDue() == 0)
            // The first delete fails (503): retried with backoff, the channel kept meanwhile.
            #expect(try await api.post(visit, #"{"type":"cancelled","reason":"rain"}"#).status == 201)
            try await h.drain("the end broadcast") { h.broadcasts(to: channel).contains { $0.accepted } }
            h.simulator.inject(
                FaultSettings(failNext: .init(count: 1, status: 503, reason: "ServiceUnavailable"), listener: .channels))
            #expect(try await h.lifecycle.deleteDue() == 0)
            let retry = try await api.pool.withConnection { c in
                try c.query("SELECT state, delete_attempts, next_delete_at FROM channels").first.map {
                    (try $0.string("state"), try $0.int("delete_attempts"), try $0.double("next_delete_at"))
                }
            }
            try await api.pool.withConnection { c in _ = try c.query("UPDATE channels SET next_delete_at = 0") }
            #expect(try await h.lifecycle.deleteDue() == 1)
            let rows = try await api.pool.withConnection { c in try c.query("SELECT 1 FROM channels").count }
            let held = h.simulator.channels()
            let deletes = h.simulator.deliveries().filter { $0.method == "DELETE" }
            await h.stop()
            #expect(retry?.0 == "deleting" && retry?.1 == 1 && (retry?.2 ?? 0) > Date().timeIntervalSince1970 - 1)
            #expect(rows == 0 && held.isEmpty)
            #expect(deletes.map(\.status) == [503, 204] && deletes.allSatisfy { $0.header("apns-channel-id") == channel })
        }
    }

    @Test func reconcileDeletesAnOrphanKeepsALiveChannelAndForgetsAVanishedOne() async throws {
        try await Harness.with { h in
            let api = h.api
            let live = uniqueID("v")
            let vanishing = uniqueID("v")
            #expect(try await api.schedule(live).status == 201)
            #expect(try await api.schedule(vanishing).status == 201)
            let body = #"{"environment":"sandbox"}"#
            let kept = try #require(
                Self.channelId(try await api.call("PUT", "/v1/visits/\(live)/channel", key: api.dispatcher, json: body)))
            let gone = try #require(
                Self.channelId(try await api.call("PUT", "/v1/visits/\(vanishing)/channel", key: api.dispatcher, json: body)))
            let orphan = try #require(h.simulator.createChannel())
            h.simulator.forgetChannels([gone])
            let result = try await h.lifecycle.reconcile(.sandbox)
            let production = try await h.lifecycle.reconcile(.production)
            let held = h.simulator.channels()
            let listed = Self.listedChannels(try await api.call("GET", "/v1/visits/\(vanishing)", key: api.dispatcher))
            await h.stop()
            #expect(result.line == "channels reconcile: sandbox: kept 1, deleted orphans 1, forgot 1")
            #expect(production.line == "channels reconcile: production: kept 0, deleted orphans 0, forgot 0")
            #expect(held == [kept])
            #expect(!held.contains(orphan))
            #expect(listed.isEmpty)
        }
    }

    @Test func reconcileNeverDeletesAChannelWhoseCreationIsInFlight() async throws {
        try await Harness.with { h in
            let api = h.api
            let visit = uniqueID("v")
            #expect(try await api.schedule(visit).status == 201)
            h.simulator.inject(FaultSettings(latency: .init(milliseconds: 1500, count: 1), listener: .channels))
            async let put = api.call(
                "PUT", "/v1/visits/\(visit)/channel", key: api.dispatcher, json: #"{"environment":"sandbox"}"#)
            // APNs holds the new channel, the database has no id for it yet.
            try await eventually("the create reached APNs") { !h.simulator.channels().isEmpty }
            let during = try await h.lifecycle.reconcile(.sandbox)
            let answer = try await put
            let after = try await h.lifecycle.reconcile(.sandbox)
            let held = h.simulator.channels()
            await h.stop()
            #expect(during.line == "channels reconcile: sandbox: kept 0, deleted orphans 0, forgot 0")
            #expect(during.spared == 1)
            #expect(answer.status == 200)
            #expect(held == [Self.channelId(answer)].compactMap { $0 })
            #expect(after.line == "channels reconcile: sandbox: kept 1, deleted orphans 0, forgot 0")
        }
    }
}
