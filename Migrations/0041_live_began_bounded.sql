-- The lapse pass's index of live activities by when they began (0024) is for that pass alone: every
-- question it answers is bounded by `began_at_ms`. Its predicate was `retired_at_ms IS NULL`, which a
-- visit's own probe of its live activities (`visit_id = … AND retired_at_ms IS NULL`: a command's followers,
-- a state report, the enqueue's targets) also satisfies, so PostgreSQL could answer such a probe by walking
-- every live activity and keeping the visit's. A plan made once while the table was small (a process
-- started on a new database, a fleet registering its activities) did so, and went on doing it for every
-- visit after the table had grown (hundreds of rows walked for one). With `began_at_ms IS NOT NULL` in the
-- predicate, which only a condition on `began_at_ms` implies, the index serves the lapse pass and nothing
-- else; a visit's probe takes the primary key, led by the visit. (A row without a begin time never
-- matched the pass's `began_at_ms <= …` anyway.)
DROP INDEX live_activities_live_began;
CREATE INDEX live_activities_live_began ON live_activities (began_at_ms)
    WHERE retired_at_ms IS NULL AND began_at_ms IS NOT NULL;
