import Runtime

/// Waits until the current task is cancelled.
enum SimulatorCancellation {
    static func wait() async {
        let gate = Lock<CheckedContinuation<Void, Never>?>(nil)
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let resumeNow = gate.withLock { slot -> Bool in
                    if Task.isCancelled { return true }
                    slot = continuation
                    return false
                }
                if resumeNow { continuation.resume() }
            }
        } onCancel: {
            gate.withLock { slot in
                slot?.resume()
                slot = nil
            }
        }
    }
}
