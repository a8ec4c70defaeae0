import Postgres

/// Where an `Idempotency-Key` is scoped (contract §6): the calling API key and the route.
public struct IdempotencyScope: Sendable, Equatable {
    public let keyId: String
    /// The method and raw path, such as `POST /v1/visits/v-1/events`.
    public let route: String
    public let key: String

    public init(keyId: String, route: String, key: String) {
        self.keyId = keyId
        self.route = route
        self.key = key
    }
}

/// An answer as kept under a key: given again, byte for byte, to a retry.
public struct StoredAnswer: Sendable, Equatable {
    public let status: Int
    public let body: String
    public let etag: String?

    public init(status: Int, body: String, etag: String?) {
        self.status = status
        self.body = body
        self.etag = etag
    }
}

/// What a key holds: the first request's body and, once that request was answered, its answer.
public struct IdempotencyRecord: Sendable, Equatable {
    public let requestBody: String
    public let answer: StoredAnswer?
}

/// The `http_idempotency` table: the first answer to each scoped `Idempotency-Key`, kept with the request
/// body it answered. An answer is always stored in the transaction of the write it answers — claimed and
/// recorded around the write (`claim`, `record`), or, for a visit command in group commit, by a statement of
/// the command's own pipeline (`takenStatement`, `storeVisitAnswerStatement`) — so a key never holds an
/// answer to a write that did not commit, nor a committed write without its answer.
public enum IdempotencyStore {
    /// Claims the key for its first request, inside the transaction that will `record` the answer: false
    /// when the key is taken (a concurrent claim is waited for).
    public static func claim(_ scope: IdempotencyScope, requestBody: String, on connection: PostgresConnection) throws -> Bool {
        try !connection.query(
            """
            INSERT INTO http_idempotency (key_id, route, idempotency_key, request_body)
            VALUES (\(scope.keyId), \(scope.route), \(scope.key), \(requestBody))
            ON CONFLICT DO NOTHING RETURNING 1
            """
        ).isEmpty
    }

    /// Records the answer to a claimed key.
    public static func record(_ scope: IdempotencyScope, answer: StoredAnswer, on connection: PostgresConnection) throws {
        try connection.query(
            """
            UPDATE http_idempotency SET status = \(answer.status), response_body = \(answer.body), response_etag = \(answer.etag)
            WHERE key_id = \(scope.keyId) AND route = \(scope.route) AND idempotency_key = \(scope.key)
            """)
    }

    /// What the key holds, or nil when it is free.
    public static func find(_ scope: IdempotencyScope, on connection: PostgresConnection) throws -> IdempotencyRecord? {
        guard
            let row = try connection.query(
                """
                SELECT request_body, status, response_body, response_etag FROM http_idempotency
                WHERE key_id = \(scope.keyId) AND route = \(scope.route) AND idempotency_key = \(scope.key)
                """
            ).first
        else { return nil }
        let answer = row["status"].flatMap { Int($0) }.map {
            StoredAnswer(status: $0, body: row["response_body"] ?? "", etag: row["response_etag"])
        }
        return IdempotencyRecord(requestBody: try row.string("request_body"), answer: answer)
    }

    /// A row when the key is taken (a retry): read before a batched command is decided
    /// (`VisitCommand.refuseIfAnyRow`), so a retry is refused alone instead of failing the batch it joined.
    public static func takenStatement(_ scope: IdempotencyScope) -> PostgresQuery {
        "SELECT 1 FROM http_idempotency WHERE key_id = \(scope.keyId) AND route = \(scope.route) AND idempotency_key = \(scope.key)"
    }

    /// Stores a visit command's 201 under the key, composed from the visit's view after the command (`view`, its
    /// text) and the read-model row the same transaction just wrote, and returns it (`response_body`,
    /// `response_etag`), so the answer stored and the answer given are the same text. The body is
    /// `VisitReadModel.body(view:liveActivities:)` in SQL — the view less its closing brace, then
    /// `"liveActivities"` (the visit's live, not retired, activities) and `"channels"` (its broadcast channels
    /// with an id, by environment) — and the ETag the quoted version of the row; `IdempotencyStoreTests` pins
    /// both forms byte for byte. A key taken meanwhile (a concurrent first try) fails the statement on the
    /// primary key, and with it the batch, which is then run again command by command.
    public static func storeVisitAnswerStatement(
        _ scope: IdempotencyScope, requestBody: String, visitId: String, view: String
    ) -> PostgresQuery {
        """
        INSERT INTO http_idempotency (key_id, route, idempotency_key, request_body, status, response_body, response_etag)
        SELECT \(scope.keyId), \(scope.route), \(scope.key), \(requestBody), 201,
               left(\(view)::text, -1) || ',"liveActivities":' ||
               (SELECT count(*) FROM live_activities la WHERE la.visit_id = v.visit_id AND la.retired_at_ms IS NULL) ||
               ',"channels":[' || COALESCE((
                   SELECT string_agg('{"channelId":' || to_json(ch.channel_id)::text || ',"environment":'
                                     || to_json(ch.environment)::text || '}', ',' ORDER BY ch.environment)
                   FROM channels ch WHERE ch.visit_id = v.visit_id AND ch.channel_id IS NOT NULL), '') || ']}',
               '"' || v.version || '"'
        FROM visits v WHERE v.visit_id = \(visitId)
        RETURNING response_body, response_etag
        """
    }
}
