-- Melee battles closed on a priority pair the server had handed out (rumble/ingest/melee.py, issue 33).
--
-- A prioritized battle whose two chosen bots finished first and second sends exactly the first 17
-- pairs of an ordinary battle (the client sends a battle's pairs in ranking order). Such a battle
-- is whole when its uploader goes on with a pair that is not one of its own and the server had
-- handed those two bots to that uploader as a priority pair: the priority queue says so, not the
-- log. The queue is working state (its rows are deleted once forgotten, and it is not exported),
-- so each battle closed that way is recorded here, like a sweep in melee_sweeps, and a rebuild
-- closes it at the same pair again. Append-only.
CREATE TABLE melee_priority_closes (
    melee_battle_id INTEGER PRIMARY KEY,  -- the battle closed (melee_battles.id)
    rumble_id INTEGER NOT NULL REFERENCES rumbles(id),
    battle_id INTEGER NOT NULL REFERENCES battles(id)  -- the pair being applied when it was closed
);
CREATE INDEX melee_priority_closes_by_rumble ON melee_priority_closes (rumble_id, battle_id);

CREATE TRIGGER melee_priority_closes_append_only_delete BEFORE DELETE ON melee_priority_closes
BEGIN
    SELECT RAISE(ABORT, 'melee priority closes are append-only');
END;

CREATE TRIGGER melee_priority_closes_append_only_update BEFORE UPDATE ON melee_priority_closes
BEGIN
    SELECT RAISE(ABORT, 'melee priority closes are append-only');
END;
