import Foundation
import JSON

/// One structured line per event worth reading: `ts level label message key=value …`.
/// Metadata keys are dotted (`visit.id`, `outbox.delivery_id`). Never log a token, key or push body:
/// use `Logger.fingerprint(_:)` when a secret must be named.
public struct Logger: Sendable {
    /// How grave a line is. `off` is only a threshold: above every level, so nothing is written, and a line
    /// logged at `off` is never written either.
    public enum Level: Int, Sendable, Comparable, CaseIterable, CustomStringConvertible {
        case debug = 0
        case info, warning, error, off
        public static func < (a: Level, b: Level) -> Bool { a.rawValue < b.rawValue }
        public var description: String {
            switch self {
            case .debug: "debug"
            case .info: "info"
            case .warning: "warning"
            case .error: "error"
            case .off: "off"
            }
        }
    }

    /// `LIVEVISITS_LOG_LEVEL` holds a word that is not a level.
    public struct LevelError: Error, Sendable, CustomStringConvertible {
        public let message: String
        public var description: String { message }
    }

    public let label: String
    public var metadata: [String: String]
    /// Where lines go instead of stderr (a test reading what was logged); nil: stderr.
    private let output: (@Sendable (String) -> Void)?

    /// - Parameter output: receives each line (with its newline) instead of stderr; for tests.
    public init(label: String, metadata: [String: String] = [:], output: (@Sendable (String) -> Void)? = nil) {
        self.label = label
        self.metadata = metadata
        self.output = output
    }

    /// Minimum level written, from `LIVEVISITS_LOG_LEVEL`, default info. A malformed value reads as info
    /// here; a command checks it first with `level(in:)` and refuses to start, so no process runs on it.
    public static let minimumLevel: Lock<Level> = Lock(
        (try? Logger.level(in: ProcessInfo.processInfo.environment)) ?? .info)

    /// The level `LIVEVISITS_LOG_LEVEL` names in `environment` (`debug`, `info`, `warning`, `error` or `off`,
    /// in any case); unset or empty: `info`. Any other value throws an error naming the variable.
    public static func level(in environment: [String: String]) throws(LevelError) -> Level {
        guard let value = environment["LIVEVISITS_LOG_LEVEL"], !value.isEmpty else { return .info }
        guard let level = Level.allCases.first(where: { $0.description == value.lowercased() }) else {
            let names = Level.allCases.map(\.description).joined(separator: ", ")
            throw LevelError(message: "LIVEVISITS_LOG_LEVEL must be one of \(names), not \(JSONValue.quoted(value))")
        }
        return level
    }

    /// Whether a line at `level` is written under `threshold`: at or above it, and never at `off`.
    public static func writes(_ level: Level, at threshold: Level) -> Bool {
        level != .off && level >= threshold
    }

    /// Whether a line at `level` is written now: for a caller that would build a line's fields only to see
    /// them dropped.
    public static func writes(_ level: Level) -> Bool {
        writes(level, at: minimumLevel.withLock { $0 })
    }

    private static let stderr = Lock(())

    public func log(_ level: Level, _ message: String, _ extra: [String: String] = [:]) {
        guard Logger.writes(level) else { return }
        var line = "\(Logger.timestamp()) \(level) \(label) \(message)"
        let merged = metadata.merging(extra) { _, new in new }
        for key in merged.keys.sorted() {
            line += " \(key)=\(Logger.quoteIfNeeded(merged[key]!))"
        }
        line += "\n"
        if let output {
            output(line)
            return
        }
        Logger.stderr.withLock { _ in
            FileHandle.standardError.write(Data(line.utf8))
        }
    }

    public func debug(_ m: String, _ md: [String: String] = [:]) { log(.debug, m, md) }
    public func info(_ m: String, _ md: [String: String] = [:]) { log(.info, m, md) }
    public func warning(_ m: String, _ md: [String: String] = [:]) { log(.warning, m, md) }
    public func error(_ m: String, _ md: [String: String] = [:]) { log(.error, m, md) }

    /// A short, stable, non-reversible name for a secret (first 8 hex digits of FNV-1a 64).
    public static func fingerprint(_ secret: String) -> String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in secret.utf8 {
            hash ^= UInt64(byte)
            hash = hash &* 0x100_0000_01b3
        }
        return String(String(hash, radix: 16).prefix(8))
    }

    private static func timestamp() -> String {
        let now = Date().timeIntervalSince1970
        return String(format: "%.3f", now)
    }

    /// A metadata value as the line shows it: as is when it is one plain word, else a JSON string
    /// literal (the one JSON escaper: quotes, backslashes and every control character escaped, so a
    /// value cannot forge a line or a field).
    public static func quoteIfNeeded(_ value: String) -> String {
        let plain =
            !value.isEmpty
            && value.utf8.allSatisfy { byte in
                byte > 0x20 && byte != UInt8(ascii: "\"") && byte != UInt8(ascii: "=")
            }
        return plain ? value : JSONValue.quoted(value)
    }
}
