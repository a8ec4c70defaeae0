-- Contract §9: iOS ends a Live Activity after 8 hours, so the server must know when each one began:
-- its first token registration (an activity started by push registers its token as it starts). A
-- rotation keeps it; nothing is sent to an activity 8 hours after it began. Rows from before this
-- migration take their last registration, the closest time known.
ALTER TABLE live_activities ADD COLUMN began_at_ms bigint;
UPDATE live_activities SET began_at_ms = registered_at_ms;
