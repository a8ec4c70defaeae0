import Foundation
import HTTPServer
import Outbox
import Postgres
import VisitCommands
import VisitDomain
import VisitProjections

extension LiveVisitsAPI {
    func addDeviceRoutes(to router: inout Router) {
        router.add(
            .put, "/v1/visits/{id}/live-activities/{activityId}", through: idempotent,
            writing { request, params, caller in
                try registerLiveActivity(request, visit: params["id"], activity: params["activityId"], caller: caller)
            })
        router.add(
            .delete, "/v1/visits/{id}/live-activities/{activityId}", through: idempotent,
            writing { request, params, caller in
                try forgetLiveActivity(request, visit: params["id"], activity: params["activityId"], caller: caller)
            })
        router.add(
            .put, "/v1/customers/{id}/devices/{deviceId}/preferences", through: idempotent,
            writing { request, params, caller in
                try setPreferences(request, customer: params["id"], device: params["deviceId"], caller: caller)
            })
        router.add(
            .put, "/v1/customers/{id}/push-to-start-tokens/{deviceId}", through: idempotent,
            writing { request, params, caller in
                try registerPushToStart(request, customer: params["id"], device: params["deviceId"], caller: caller)
            })
        router.add(
            .delete, "/v1/customers/{id}/push-to-start-tokens/{deviceId}", through: idempotent,
            writing { request, params, caller in
                try forgetPushToStart(request, customer: params["id"], device: params["deviceId"], caller: caller)
            })
        router.add(
            .put, "/v1/customers/{id}/devices/{deviceId}/notification-token", through: idempotent,
            writing { request, params, caller in
                try registerNotificationToken(request, customer: params["id"], device: params["deviceId"], caller: caller)
            })
        router.add(
            .delete, "/v1/customers/{id}/devices/{deviceId}/notification-token", through: idempotent,
            writing { request, params, caller in
                try forgetNotificationToken(request, customer: params["id"], device: params["deviceId"], caller: caller)
            })
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

    func registerLiveActivity(_ request: HTTPRequest, visit: String?, activity: String?, caller: Caller) throws -> Write {
        let environment = self.environment
        guard caller.role == .customer else { throw APIError.forbidden("only the customer's app registers Live Activities") }
        let visitId = try RequestChecks.id(visit, name: "visit")
        let activityId = try RequestChecks.id(activity, name: "live activity")
        let body = try RequestBody(request)
        try body.allowOnly(["pushToken", "environment", "version", "deviceId"])
        let token = try body.requiredString("pushToken", maxBytes: 400)
        let pushEnvironment = try LiveVisitsAPI.environment(body)
        let version = try body.integer("version")
        let deviceId = try body.string("deviceId", maxBytes: 128)
        return Write { c in
            guard let state = try VisitReadModel.state(visitId: visitId, on: c), state.customerId == caller.subject else {
                throw APIError.notFound("visit")
            }
            try environment.tokens.registerLiveActivity(
                visitId: visitId, activityId: activityId, pushToken: token, environment: pushEnvironment, deviceId: deviceId,
                on: c)
            // The visit's next commands are written with their pushes (else the first batch's targets probe would
            // find this one, and the batch would go again).
            environment.batcher.handler.states.targetsRegistered(visits: [visitId])
            // Behind (or silent about) the visit's version: push the latest state at once.
            let behind = version.map { $0 < state.version } ?? true
            if behind {
                let plan = PushPlanner.catchUp(for: state, rules: environment.rules)
                try environment.pushes.enqueueCatchUp(plan, for: state, activityId: activityId, on: c)
            }
            return Answer(status: 204, body: "", enqueuedPushes: behind)
        }
    }

    func forgetLiveActivity(_ request: HTTPRequest, visit: String?, activity: String?, caller: Caller) throws -> Write {
        let environment = self.environment
        guard caller.role == .customer else { throw APIError.forbidden("only the customer's app removes Live Activities") }
        let visitId = try RequestChecks.id(visit, name: "visit")
        let activityId = try RequestChecks.id(activity, name: "live activity")
        return Write { c in
            guard let row = try VisitReadModel.row(visitId: visitId, on: c), row.customerId == caller.subject else {
                throw APIError.notFound("visit")
            }
            _ = try environment.tokens.forgetLiveActivity(visitId: visitId, activityId: activityId, on: c)
            return Answer(status: 204, body: "")
        }
    }

    func setPreferences(_ request: HTTPRequest, customer: String?, device: String?, caller: Caller) throws -> Write {
        let environment = self.environment
        let customerId = try LiveVisitsAPI.customer(caller, id: customer)
        let deviceId = try RequestChecks.id(device, name: "device")
        let body = try RequestBody(request)
        try body.allowOnly(["liveActivitiesEnabled", "frequentPushesEnabled"])
        let enabled = try body.bool("liveActivitiesEnabled")
        let frequent = try body.bool("frequentPushesEnabled")
        return Write { c in
            try environment.tokens.setPreferences(
                customerId: customerId, deviceId: deviceId, liveActivitiesEnabled: enabled, frequentPushesEnabled: frequent, on: c
            )
            return Answer(status: 204, body: "")
        }
    }

    func registerPushToStart(_ request: HTTPRequest, customer: String?, device: String?, caller: Caller) throws -> Write {
        let environment = self.environment
        let customerId = try LiveVisitsAPI.customer(caller, id: customer)
        let deviceId = try RequestChecks.id(device, name: "device")
        let body = try RequestBody(request)
        try body.allowOnly(["pushToken", "environment"])
        let token = try body.requiredString("pushToken", maxBytes: 400)
        let pushEnvironment = try LiveVisitsAPI.environment(body)
        return Write { c in
            try environment.tokens.registerPushToStart(
                customerId: customerId, deviceId: deviceId, pushToken: token, environment: pushEnvironment, on: c)
            environment.batcher.handler.states.targetsRegistered(customer: customerId)
            // Active visits of this customer without a Live Activity yet get their start on this device.
            var started = false
            var after: (Int64, Int64)? = nil
            while true {
                let page = try VisitReadModel.list(.init(customerId: customerId, ended: false, limit: 200, after: after), on: c)
                for row in page.prefix(200) where try environment.tokens.liveActivityCount(visitId: row.visitId, on: c) == 0 {
                    if let state = try VisitReadModel.state(visitId: row.visitId, on: c),
                        let plan = PushPlanner.lateStart(for: state, rules: environment.rules)
                    {
                        try environment.pushes.enqueueLateStart(plan, for: state, deviceId: deviceId, on: c)
                        started = true
                    }
                }
                guard page.count > 200, let last = page.prefix(200).last else { break }
                after = (last.scheduledAt, last.booked)
            }
            return Answer(status: 204, body: "", enqueuedPushes: started)
        }
    }

    /// A device's ordinary APNs token (contract §9): the fallback notifications go to it.
    func registerNotificationToken(_ request: HTTPRequest, customer: String?, device: String?, caller: Caller) throws
        -> Write
    {
        let environment = self.environment
        let customerId = try LiveVisitsAPI.customer(caller, id: customer)
        let deviceId = try RequestChecks.id(device, name: "device")
        let body = try RequestBody(request)
        try body.allowOnly(["pushToken", "environment"])
        let token = try body.requiredString("pushToken", maxBytes: 400)
        let pushEnvironment = try LiveVisitsAPI.environment(body)
        return Write { c in
            try environment.tokens.register(
                .notificationDevice(customerId: customerId, deviceId: deviceId), pushToken: token,
                environment: pushEnvironment, on: c)
            environment.batcher.handler.states.targetsRegistered(customer: customerId)
            return Answer(status: 204, body: "")
        }
    }

    func forgetNotificationToken(_ request: HTTPRequest, customer: String?, device: String?, caller: Caller) throws -> Write {
        let environment = self.environment
        let customerId = try LiveVisitsAPI.customer(caller, id: customer)
        let deviceId = try RequestChecks.id(device, name: "device")
        return Write { c in
            _ = try environment.tokens.forget(.notificationDevice(customerId: customerId, deviceId: deviceId), on: c)
            return Answer(status: 204, body: "")
        }
    }

    func forgetPushToStart(_ request: HTTPRequest, customer: String?, device: String?, caller: Caller) throws -> Write {
        let environment = self.environment
        let customerId = try LiveVisitsAPI.customer(caller, id: customer)
        let deviceId = try RequestChecks.id(device, name: "device")
        return Write { c in
            _ = try environment.tokens.forgetPushToStart(customerId: customerId, deviceId: deviceId, on: c)
            return Answer(status: 204, body: "")
        }
    }
}
