-- The dead letters by state: the console's ops page asks for the newest dead (or expired) pushes and dead
-- webhooks every 2 seconds (`GET /v1/ops/outbox?state=dead`). Without these indexes each ask walked the
-- primary key backwards through every row the outbox keeps looking for one in that state, and in a healthy
-- fleet there is none: a month of pushes read twice a second per open page. Partial on the rare states, so
-- a push that is sent (nearly all of them) writes no entry here.
CREATE INDEX deliveries_dead_letters ON deliveries (state, id) WHERE state IN ('dead', 'expired');
CREATE INDEX webhooks_dead_letters ON webhooks (id) WHERE state = 'dead';
