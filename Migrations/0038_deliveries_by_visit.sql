-- A visit's pushes by visit: `GET /v1/visits/{id}/deliveries` (the newest first, by id) and the console's
-- visit page read them, and without this index each read scanned every delivery the outbox keeps — a month
-- of a fleet's pushes. The columns never change after the insert, so the updates of a push's state stay
-- heap-only; what it costs is one entry more per push enqueued.
CREATE INDEX deliveries_by_visit ON deliveries (visit_id, id);
