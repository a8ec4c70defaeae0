import Foundation
import Runtime

extension APNsSimulator {
    /// `livevisits apns-sim [flags]`: starts a simulator, prints its URL and CA file, prints one line
    /// per push, and runs until SIGTERM or SIGINT.
    ///
    /// Throws `SimulatorError` with `isUsageError` for bad flags (exit status 2), other codes for
    /// runtime failures (exit status 1).
    public static func runCommand(arguments: [String]) async throws(SimulatorError) {
        let options = try SimulatorCommandOptions.parse(arguments)
        if options.help {
            APNsSimulator.printLine(SimulatorCommandOptions.usage)
            return
        }
        var config = try options.configuration()
        if options.printDeliveries {
            config.onDelivery = { delivery in APNsSimulator.printLine(delivery.summaryLine) }
        }
        let simulator = try APNsSimulator(configuration: config)
        let endpoint = try await simulator.start()
        APNsSimulator.printLine("apns-sim listening on \(endpoint.url)")
        APNsSimulator.printLine("sandbox pushes on \(endpoint.sandboxURL)")
        APNsSimulator.printLine("channels on \(endpoint.channelsURL)")
        APNsSimulator.printLine("ca file: \(endpoint.caFile)")
        if config.providerKeys.isEmpty {
            config.logger.warning("no provider key configured: JWT signatures are not verified")
        }
        _ = await SignalWatcher.shared.next()
        await simulator.stop()
    }

    static func printLine(_ text: String) {
        FileHandle.standardOutput.write(Data((text + "\n").utf8))
    }
}
