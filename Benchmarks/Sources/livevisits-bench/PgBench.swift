import Foundation
import Postgres
import Runtime

/// The machine's own limit: `pgbench -M prepared` inserting one event-sized jsonb row per transaction into
/// `pgbench_events`, a copy of `events` with the same indexes (unique (stream_name, position) included),
/// defaults and identity.
struct PgBench {
    /// What each of pgbench's transactions does.
    enum Script: String {
        /// One row on a random stream at a position from one global sequence: no stream's order to keep.
        case insert
        /// One row appended to a random stream at its next position (the stream's last one + 1, read in the
        /// insert; a race with another client on the stream inserts nothing): what an event store's append
        /// has to do on top of the insert, written as PostgreSQL's own client would.
        case streamAppend = "stream-append"
    }

    let path: String
    let url: String
    let streams: Int

    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    /// Creates the table and writes the script next to the other temporary files.
    func prepare(eventData: String) async throws {
        try await PostgresPool.withPool(PostgresConfiguration(url: url, size: 1)) { pool in
            try await pool.withConnection { c in
                try c.execute(
                    script: """
                        CREATE TABLE pgbench_events (LIKE events INCLUDING ALL);
                        CREATE SEQUENCE pgbench_events_position;
                        """)
            }
        }
        // The payload is concatenated per row, so PostgreSQL parses a fresh jsonb each time as appends do.
        let head = String(eventData.prefix(14))  // {"visitId":"v-
        let tail = String(eventData.dropFirst(20))  // after the six digits
        let data = "('\(head)' || lpad(:s::text, 6, '0') || '\(tail)')::jsonb"
        let metadata = #"'{"actorRole": "dispatcher", "actorSubject": "d-1"}'"#
        let insert = """
            \\set s random(1, \(streams))
            INSERT INTO pgbench_events (stream_name, position, type, data, metadata) VALUES ('bench-' || :s, nextval('pgbench_events_position'), 'visitProgressed', \(data), \(metadata));

            """
        let streamAppend = """
            \\set s random(1, \(streams))
            INSERT INTO pgbench_events (stream_name, position, type, data, metadata) SELECT 'append-' || :s, COALESCE(max(position), 0) + 1, 'visitProgressed', \(data), \(metadata) FROM pgbench_events WHERE stream_name = 'append-' || :s ON CONFLICT (stream_name, position) DO NOTHING;

            """
        try insert.write(to: scriptURL(.insert), atomically: true, encoding: .utf8)
        try streamAppend.write(to: scriptURL(.streamAppend), atomically: true, encoding: .utf8)
    }

    private func scriptURL(_ script: Script) -> URL {
        FileManager.default.temporaryDirectory.appendingPathComponent("livevisits-pgbench-\(script.rawValue).sql")
    }

    /// Runs `script` for `seconds` with `clients` connections; returns its transactions per second.
    func run(_ script: Script = .insert, clients: Int, seconds: Double) throws -> Double {
        // Runtime's ChildProcess starts pgbench with default signal handlers and an empty mask: its `-T`
        // relies on SIGALRM, which a child of Foundation's `Process` inherited blocked (pgbench never stopped).
        let outcome = try ChildProcess(
            path,
            [
                "-n", "-M", "prepared", "-c", String(clients), "-j", String(min(clients, 2)),
                "-T", String(max(1, Int(seconds.rounded()))), "-f", scriptURL(script).path, url,
            ]
        ).runBlocking()
        guard outcome.status == 0 else {
            throw Failure(description: "pgbench failed (\(outcome.status)): \(outcome.stderr.split(separator: "\n").last ?? "")")
        }
        let output = outcome.stdout
        // "tps = 1234.567890 (without initial connection time)"
        for line in output.split(separator: "\n") where line.hasPrefix("tps = ") {
            if let number = line.dropFirst(6).split(separator: " ").first, let tps = Double(number) { return tps }
        }
        throw Failure(description: "pgbench printed no tps line")
    }
}
