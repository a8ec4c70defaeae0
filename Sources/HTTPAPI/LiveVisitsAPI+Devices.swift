import APIStores
import Foundation
import HTTPServer
import LiveActivityLedger
import Outbox
import VisitCommands
import VisitDomain

extension LiveVisitsAPI {
    /// How a device route's write is prepared from its request, its two path ids and its caller.
    typealias DeviceWrite = @Sendable (LiveVisitsAPI, HTTPRequest, String?, String?, Caller) throws -> Write

    /// The device routes (contract §9): each is an idempotent write named by two path ids, `{id}` and
    /// the second given here.
    static let deviceRoutes: [(method: HTTPMethod, path: String, second: String, prepare: DeviceWrite)] = {
        let liveActivity = "/v1/visits/{id}/live-activities/{activityId}"
        let preferences = "/v1/customers/{id}/devices/{deviceId}/preferences"
        let pushToStart = "/v1/customers/{id}/push-to-start-tokens/{deviceId}"
        let deviceToken = "/v1/customers/{id}/devices/{deviceId}/notification-token"
        return [
            (.put, liveActivity, "activityId", { try $0.registerLiveActivity($1, visit: $2, activity: $3, caller: $4) }),
            (.delete, liveActivity, "activityId", { try $0.forgetLiveActivity($1, visit: $2, activity: $3, caller: $4) }),
            (.put, preferences, "deviceId", { try $0.setPreferences($1, customer: $2, device: $3, caller: $4) }),
            (.put, pushToStart, "deviceId", { try $0.registerPushToStart($1, customer: $2, device: $3, caller: $4) }),
            (.delete, pushToStart, "deviceId", { try $0.forgetPushToStart($1, customer: $2, device: $3, caller: $4) }),
            (.put, deviceToken, "deviceId", { try $0.registerNotificationToken($1, customer: $2, device: $3, caller: $4) }),
            (.delete, deviceToken, "deviceId", { try $0.forgetNotificationToken($1, customer: $2, device: $3, caller: $4) }),
        ]
    }()

    func addDeviceRoutes(to router: inout Router) {
        for route in LiveVisitsAPI.deviceRoutes {
            router.add(
                route.method, route.path, through: idempotent,
                writing { request, params, caller in
                    try route.prepare(self, request, params["id"], params[route.second], caller)
                })
        }
    }

    /// The customer id in the path, when the caller is that customer's key.
    static func customer(_ caller: Caller, id: String?) throws -> String {
        guard caller.role == .customer else { throw APIError.forbidden("only the customer's own app registers devices") }
        let customerId = try RequestChecks.id(id, name: "customer")
        guard caller.subject == customerId else { throw APIError.notFound("customer") }
        return customerId
    }

    static func environment(_ body: RequestBody) throws -> PushEnvironment {
        let text = try body.requiredString("environment", maxBytes: 32)
        guard let environment = PushEnvironment(rawValue: text) else {
            throw APIError(.invalidValue, "environment: expected sandbox or production")
        }
        return environment
    }

    /// A device write's answer: 204, the outbox woken when it enqueued pushes.
    static func deviceWrite(_ step: @escaping TransactionWork<Bool>) -> Write {
        Write(IdempotentTransactions.work(step) { Answer(status: 204, body: "", enqueuedPushes: $0) })
    }

    static func deviceWrite(_ step: @escaping TransactionWork<Void>) -> Write {
        Write(IdempotentTransactions.work(step) { Answer(status: 204, body: "") })
    }

    func registerLiveActivity(_ request: HTTPRequest, visit: String?, activity: String?, caller: Caller) throws -> Write {
        guard caller.role == .customer else { throw APIError.forbidden("only the customer's app registers Live Activities") }
        let visitId = try RequestChecks.id(visit, name: "visit")
        let activityId = try RequestChecks.id(activity, name: "live activity")
        let body = try RequestBody(request)
        try body.allowOnly(["pushToken", "environment", "version", "deviceId"])
        let token = try body.requiredString("pushToken", maxBytes: 400)
        let pushEnvironment = try LiveVisitsAPI.environment(body)
        let version = try body.integer("version")
        let deviceId = try body.optionalId("deviceId")
        return LiveVisitsAPI.deviceWrite(
            environment.devices.registerLiveActivity(
                visitId: visitId, activityId: activityId, customerId: caller.subject, pushToken: token,
                environment: pushEnvironment, version: version, deviceId: deviceId))
    }

    func forgetLiveActivity(_ request: HTTPRequest, visit: String?, activity: String?, caller: Caller) throws -> Write {
        guard caller.role == .customer else { throw APIError.forbidden("only the customer's app removes Live Activities") }
        let visitId = try RequestChecks.id(visit, name: "visit")
        let activityId = try RequestChecks.id(activity, name: "live activity")
        return LiveVisitsAPI.deviceWrite(
            environment.devices.forgetLiveActivity(visitId: visitId, activityId: activityId, customerId: caller.subject))
    }

    func setPreferences(_ request: HTTPRequest, customer: String?, device: String?, caller: Caller) throws -> Write {
        let customerId = try LiveVisitsAPI.customer(caller, id: customer)
        let deviceId = try RequestChecks.id(device, name: "device")
        let body = try RequestBody(request)
        try body.allowOnly(["liveActivitiesEnabled", "frequentPushesEnabled"])
        let enabled = try body.bool("liveActivitiesEnabled")
        let frequent = try body.bool("frequentPushesEnabled")
        return LiveVisitsAPI.deviceWrite(
            environment.devices.setPreferences(
                customerId: customerId, deviceId: deviceId, liveActivitiesEnabled: enabled, frequentPushesEnabled: frequent))
    }

    /// A device token in the customer's path and body (`{"pushToken","environment"}`).
    static func deviceToken(_ request: HTTPRequest, customer: String?, device: String?, caller: Caller) throws -> (
        customerId: String, deviceId: String, token: String, environment: PushEnvironment
    ) {
        let customerId = try LiveVisitsAPI.customer(caller, id: customer)
        let deviceId = try RequestChecks.id(device, name: "device")
        let body = try RequestBody(request)
        try body.allowOnly(["pushToken", "environment"])
        let token = try body.requiredString("pushToken", maxBytes: 400)
        return (customerId, deviceId, token, try LiveVisitsAPI.environment(body))
    }

    func registerPushToStart(_ request: HTTPRequest, customer: String?, device: String?, caller: Caller) throws -> Write {
        let device = try LiveVisitsAPI.deviceToken(request, customer: customer, device: device, caller: caller)
        return LiveVisitsAPI.deviceWrite(
            environment.devices.registerPushToStart(
                customerId: device.customerId, deviceId: device.deviceId, pushToken: device.token,
                environment: device.environment))
    }

    /// A device's ordinary APNs token (contract §9): the fallback notifications go to it.
    func registerNotificationToken(_ request: HTTPRequest, customer: String?, device: String?, caller: Caller) throws
        -> Write
    {
        let device = try LiveVisitsAPI.deviceToken(request, customer: customer, device: device, caller: caller)
        return LiveVisitsAPI.deviceWrite(
            environment.devices.registerNotificationToken(
                customerId: device.customerId, deviceId: device.deviceId, pushToken: device.token,
                environment: device.environment))
    }

    func forgetNotificationToken(_ request: HTTPRequest, customer: String?, device: String?, caller: Caller) throws -> Write {
        let customerId = try LiveVisitsAPI.customer(caller, id: customer)
        let deviceId = try RequestChecks.id(device, name: "device")
        return LiveVisitsAPI.deviceWrite(environment.devices.forgetNotificationToken(customerId: customerId, deviceId: deviceId))
    }

    func forgetPushToStart(_ request: HTTPRequest, customer: String?, device: String?, caller: Caller) throws -> Write {
        let customerId = try LiveVisitsAPI.customer(caller, id: customer)
        let deviceId = try RequestChecks.id(device, name: "device")
        return LiveVisitsAPI.deviceWrite(environment.devices.forgetPushToStart(customerId: customerId, deviceId: deviceId))
    }
}
