import APNsSimulator
import Runtime

/// `livevisits apns-sim [options]`: the local APNs simulator, until SIGTERM (`--help`: its options).
enum APNsSimCommand {
    static func run(_ arguments: [String]) async throws {
        let outcome: Result<Void, SimulatorError> = await run(arguments)
        if case .failure(let error) = outcome {
            if error.isUsageError { throw UsageError(error.message) }
            throw CommandFailure("\(error)")
        }
    }

    private static func run(_ arguments: [String]) async -> Result<Void, SimulatorError> {
        do {
            try await APNsSimulator.runCommand(arguments: arguments)
            return .success(())
        } catch {
            return .failure(error)
        }
    }
}
