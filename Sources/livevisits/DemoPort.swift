import Runtime

/// Finds the port the demo's API listens on: 8080 when it is free, else one the kernel picks.
enum DemoPort {
    /// `(port, preferredWasTaken)`.
    static func choose(preferred: UInt16 = 8080) -> (UInt16, Bool) {
        if LoopbackPort.bindable(preferred) != nil { return (preferred, false) }
        return (LoopbackPort.bindable() ?? 0, true)
    }
}
