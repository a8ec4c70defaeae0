import Webhooks

extension Configuration {
    /// `LIVEVISITS_WEBHOOK_URL` and `LIVEVISITS_WEBHOOK_SECRET`: both or neither (nil: no webhooks); the URL
    /// http(s). Anything else is refused, naming the variable.
    func webhookConfiguration() throws -> WebhookConfiguration? {
        do {
            return try WebhookConfiguration.fromEnvironment(environment)
        } catch {
            throw ConfigurationError(error.message)
        }
    }
}
