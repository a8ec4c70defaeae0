import CLibPQ
import Foundation
import Runtime
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// LISTENs on channels over a dedicated connection on a thread of its own and calls `onNotify` for each
/// notification. After a reconnect it calls `onNotify` with an empty channel, since notifications may have
/// been missed while it was away: followers must treat any call as "look again", never as the data itself.
/// Where LISTEN is unavailable (a transaction-pooling proxy), it keeps retrying and followers rely on polling.
public final class PostgresListener: Service {
    public let name = "postgres-listener"
    private let url: String
    private let channels: [String]
    private let onNotify: @Sendable (_ channel: String, _ payload: String) -> Void
    private let logger = Logger(label: "postgres.listener")
    private let stopping = Atomic<Bool>(false)
    /// True while LISTEN is established; followers can poll faster when it is not.
    public let isListening = Atomic<Bool>(false)

    public init(url: String, channels: [String], onNotify: @escaping @Sendable (String, String) -> Void) {
        self.url = url
        self.channels = channels
        self.onNotify = onNotify
    }

    public func run() async throws {
        stopping.store(false, ordering: .sequentiallyConsistent)
        await withTaskCancellationHandler {
            await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
                let thread = Thread { [self] in
                    loop()
                    done.resume()
                }
                thread.name = "livevisits.listener"
                thread.start()
            }
        } onCancel: {
            stopping.store(true, ordering: .sequentiallyConsistent)
        }
    }

    private var channelList: String { channels.joined(separator: ",") }

    /// `livevisits_database_listening{channels}`: 1 while LISTEN is established, 0 while followers poll
    /// (a server away, or a pooler that does not keep sessions).
    private func setListening(_ up: Bool) {
        Metrics.shared.set(
            "livevisits_database_listening", help: "1 while LISTEN is established, 0 while followers poll.",
            labels: ["channels": channelList], to: up ? 1 : 0)
    }

    private func loop() {
        var backoff = 0.1
        var first = true
        while !stopping.load(ordering: .sequentiallyConsistent) {
            let connection: PostgresConnection
            do {
                connection = try PostgresConnection(url: url, connectTimeoutSeconds: 3, usePreparedStatements: false)
                for channel in channels {
                    try connection.execute(script: "LISTEN \"\(channel.replacingOccurrences(of: "\"", with: ""))\"")
                }
            } catch {
                isListening.store(false, ordering: .sequentiallyConsistent)
                setListening(false)
                if first { logger.warning("LISTEN unavailable; followers poll", ["error": "\(error)"]) }
                first = false
                Thread.sleep(forTimeInterval: backoff)
                backoff = min(backoff * 2, 5)
                continue
            }
            if !first {
                onNotify("", "")  // we may have missed notifications while away (before isListening)
                logger.info("LISTEN established again", ["postgres.channels": channelList])
            }
            isListening.store(true, ordering: .sequentiallyConsistent)
            setListening(true)
            first = false
            backoff = 0.1
            while !stopping.load(ordering: .sequentiallyConsistent) {
                var pfd = pollfd(fd: connection.socket, events: Int16(POLLIN), revents: 0)
                let ready = poll(&pfd, 1, 200)
                if ready < 0 && errno != EINTR { break }
                if ready > 0 {
                    guard connection.consumeInput() else { break }
                    while let n = connection.nextNotification() { onNotify(n.channel, n.payload) }
                }
                if !connection.isHealthy { break }
            }
            isListening.store(false, ordering: .sequentiallyConsistent)
            setListening(false)
            if !stopping.load(ordering: .sequentiallyConsistent) {
                // The server went away (a restart, a failover): reconnect, polling meanwhile.
                logger.warning(
                    "LISTEN connection lost; reconnecting, followers poll meanwhile", ["postgres.channels": channelList])
                Metrics.shared.increment(
                    "livevisits_database_listen_reconnects_total", help: "LISTEN connections lost and reopened.",
                    labels: ["channels": channelList])
            }
        }
    }
}
