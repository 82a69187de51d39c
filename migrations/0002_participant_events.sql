-- Retirements and restorations, in order with the battle log: the one kind of state change that is
-- not a battle. A rebuild replays battles and these events in sequence, so that everything that
-- depends on who was active when (the ratings) comes out the same as online. Append-only.
--
-- after_battle_id is the highest battle id in the whole log when the event happened: the event
-- took effect after that battle and before the next one.

CREATE TABLE participant_events (
    id INTEGER PRIMARY KEY,
    rumble_id INTEGER NOT NULL REFERENCES rumbles(id),
    bot_id INTEGER NOT NULL REFERENCES bots(id),
    active INTEGER NOT NULL,            -- 0: retired, 1: restored
    after_battle_id INTEGER NOT NULL,
    happened_at TEXT NOT NULL,
    source TEXT NOT NULL                -- e.g. 'RemoveOldParticipant from 127.0.0.1'
);
CREATE INDEX participant_events_by_rumble ON participant_events (rumble_id, id);

CREATE TRIGGER participant_events_append_only_delete BEFORE DELETE ON participant_events
BEGIN
    SELECT RAISE(ABORT, 'participant events are append-only');
END;

CREATE TRIGGER participant_events_append_only_update BEFORE UPDATE ON participant_events
BEGIN
    SELECT RAISE(ABORT, 'participant events are append-only');
END;
