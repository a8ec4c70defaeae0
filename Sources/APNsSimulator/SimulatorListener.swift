/// Which of the simulator's listeners a connection came in on: device pushes and broadcasts
/// (`/3/device/…`, `/4/broadcasts/apps/…`) as Apple's production host answers them, the same as its
/// development (sandbox) host answers them, or channel management (`/1/apps/<bundle>/channels`,
/// `…/all-channels`), which Apple serves on hosts of its own (ports 2195 and 2196).
public enum SimulatorListener: String, Sendable, Hashable {
    /// Pushes to the production host (`SimulatorEndpoint.url`).
    case pushes
    /// Pushes to the sandbox host (`SimulatorEndpoint.sandboxURL`): the same validation and faults as
    /// `pushes` (one plan for both), and an accepted push is answered with an `apns-unique-id`, as
    /// Apple's development environment does.
    case sandboxPushes
    /// Channel management (`SimulatorEndpoint.channelsURL`).
    case channels
}
