/// The `apns-push-type` header. LiveVisits only sends Live Activity pushes.
public enum APNsPushType: String, Sendable, Hashable {
    case liveactivity
}
