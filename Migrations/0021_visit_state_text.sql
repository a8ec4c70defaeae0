-- Issue 19: the read model's folded state is stored as the text the command path wrote.
--
-- Nothing in PostgreSQL looks inside `visits.state`: every reader takes it back as text (`state::text`) and
-- parses it in the product. As jsonb it was parsed by PostgreSQL on every write (each event of a visit
-- rewrites it) and printed again on every read, and took a third more room than the text (a row is written
-- in full on every event: ~670 bytes of jsonb against ~480 of text).
ALTER TABLE visits ALTER COLUMN state TYPE text USING state::text;
