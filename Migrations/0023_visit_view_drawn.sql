-- Issue 19: the read model keeps the folded state and what the rules gave it, not the view as well.
--
-- `view` (the GET /v1/visits/{id} body) repeated most of `state` (the attributes, sealed, the technician, the
-- window), and a visit's row is written in full on every event: ~1.5 kB a row, of which the view was ~650
-- bytes, and on this kind of machine PostgreSQL's cost per command follows the bytes it writes. The view is
-- now drawn from `state` when read, with the three values the rules in force gave it when it was written
-- (relevance, stale date, dismissal), kept here so that a rule change still applies to new events only.
ALTER TABLE visits
    ADD COLUMN relevance_score  double precision,
    ADD COLUMN stale_date       bigint,
    ADD COLUMN dismissal_policy text,
    ADD COLUMN dismissal_date   bigint;

UPDATE visits SET
    relevance_score  = (view::json ->> 'relevanceScore')::double precision,
    stale_date       = (view::json ->> 'staleDate')::bigint,
    dismissal_policy = view::json -> 'dismissal' ->> 'policy',
    dismissal_date   = (view::json -> 'dismissal' ->> 'date')::bigint;

ALTER TABLE visits
    ALTER COLUMN relevance_score SET NOT NULL,
    ADD CONSTRAINT visits_dismissal_policy CHECK (dismissal_policy IN ('immediate', 'default', 'after')),
    DROP COLUMN view;
