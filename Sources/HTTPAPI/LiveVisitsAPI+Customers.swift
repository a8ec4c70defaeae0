import APIStores
import CustomerErasure
import Foundation
import HTTPServer

extension LiveVisitsAPI {
    func addCustomerRoutes(to router: inout Router) {
        router.add(
            .delete, "/v1/customers/{id}", through: authenticated,
            LiveVisitsAPI.withCaller { _, params, caller in
                try await eraseCustomer(id: params["id"], caller: caller)
            })
    }

    /// `DELETE /v1/customers/{id}` (ops; contract §10, the right to be forgotten): `CustomerErasure`. 204;
    /// 409 `customer_has_active_visits` while one of their visits has not ended, 404 when nothing is known
    /// of the customer.
    func eraseCustomer(id: String?, caller: Caller) async throws -> HTTPResponse {
        try LiveVisitsAPI.requireOps(caller)
        let customerId = try RequestChecks.id(id, name: "customer")
        let erasure = environment.erasure
        _ = try await mapped { try await erasure.erase(customerId: customerId, by: caller) }
        logger.info("customer erased", ["customer.id": customerId, "actor.key_id": caller.keyId])
        return HTTPResponse(status: 204)
    }
}
