-- The booking order kept in the row: `booked` is the global position of the visit's first event (its
-- `scheduled`), which breaks ties between visits scheduled in the same second in every list (the newest
-- booked first) and is half of a list's cursor. Lists used to read it from the log, one probe per row,
-- and then sort: the consoles' boards ask for the newest hundred visits several times a second, and that
-- probe and sort were most of PostgreSQL's work for them. With the column the list indexes give the order
-- themselves and a page reads its rows and stops. 0 when the visit's first event is not in the log.
ALTER TABLE visits ADD COLUMN booked bigint NOT NULL DEFAULT 0;
UPDATE visits v SET booked = e.global_position
FROM events e WHERE e.stream_name = 'visit-' || v.visit_id AND e.position = 1;
DROP INDEX visits_by_customer;
DROP INDEX visits_by_technician;
DROP INDEX visits_by_schedule;
CREATE INDEX visits_by_customer ON visits (customer_id, scheduled_at DESC, booked DESC);
CREATE INDEX visits_by_technician ON visits (technician_id, scheduled_at DESC, booked DESC);
CREATE INDEX visits_by_schedule ON visits (scheduled_at DESC, booked DESC);
