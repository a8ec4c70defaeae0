/// Which of the simulator's listeners a connection came in on: device pushes and broadcasts
/// (`/3/device/…`, `/4/broadcasts/apps/…`), or channel management (`/1/apps/<bundle>/channels`,
/// `…/all-channels`), which Apple serves on hosts of its own (ports 2195 and 2196).
public enum SimulatorListener: String, Sendable, Hashable {
    case pushes
    case channels
}
