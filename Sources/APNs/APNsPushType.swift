/// The `apns-push-type` header: Live Activity pushes, and the ordinary notifications a device without a
/// Live Activity gets instead (contract §9). Each has its own topic (`APNsConfiguration.topic(for:)`).
public enum APNsPushType: String, Sendable, Hashable {
    case liveactivity
    case alert
}
