import JSON
import Postgres

extension RecordedEvent {
    /// The event as a visit's history shows it — `GET /v1/visits/{id}/events` and a `visit.event` webhook's
    /// `data`: position, version, type, data, recorded time (whole epoch seconds) and actor (role, subject, and
    /// `name` when the key that appended it has one). The `scheduled` event's `location` (the customer's, for
    /// dispatchers and ops only) is left out unless `showingLocation`. Sealed personal fields stay sealed here;
    /// the caller opens them on the way out.
    public func historyEntry(showingLocation: Bool) -> JSONValue {
        var data = (try? JSONValue.parse(Array(self.data.utf8))) ?? .null
        if !showingLocation, case .object(var members) = data, members.contains(where: { $0.key == "location" }) {
            members.removeAll { $0.key == "location" }
            data = .object(members)
        }
        let actor: [JSONMember] = [
            JSONMember("role", metadata.actorRole.map { .string($0) } ?? .null),
            JSONMember("subject", metadata.actorSubject.map { .string($0) } ?? .null),
        ]
        return .object([
            JSONMember("position", .number(Double(globalPosition))),
            JSONMember("version", .number(Double(position))),
            JSONMember("type", .string(type)),
            JSONMember("data", data),
            JSONMember("recordedAt", .number(recordedAt.rounded(.down))),
            JSONMember("actor", .object(actor + (metadata.actorName.map { [JSONMember("name", .string($0))] } ?? []))),
        ])
    }

    /// The history entry without the service location: what a webhook receiver gets.
    public var historyEntry: JSONValue { historyEntry(showingLocation: false) }
}

extension EventStore {
    /// The events at these global positions (any streams), in global order; positions without an event are
    /// left out.
    public static func readEvents(globalPositions: [Int64], on connection: PostgresConnection) throws -> [RecordedEvent] {
        guard !globalPositions.isEmpty else { return [] }
        let rows = try connection.query(
            """
            SELECT global_position, stream_name, position, type, data::text AS data, metadata::text AS metadata,
                   transaction_id::text AS transaction_id, extract(epoch FROM recorded_at)::float8 AS recorded_at
            FROM events WHERE global_position = ANY (\(PostgresBinaryArray(globalPositions))::bigint[])
            ORDER BY global_position
            """)
        return try rows.rows.map(decode)
    }
}
