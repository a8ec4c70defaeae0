-- Issue 19: a command on a visit known to have no push target is written without the outbox's enqueue
-- statement (for such a visit it creates, supersedes and cancels nothing, yet PostgreSQL sets up its whole
-- plan at every execution). The same transaction checks that the visit still has none
-- (`Outbox.targetsProbe`); where one appeared meanwhile (a token registered by another process), this
-- function fails the transaction, and the commands are written again with their pushes.
CREATE FUNCTION livevisits_targets_appeared(visit_id text) RETURNS boolean
LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'visit % has push targets now: its commands are written again with their pushes', visit_id
        USING ERRCODE = 'LV001';
END
$$;
