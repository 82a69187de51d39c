-- A battle's protocol version, client version and battlefield are kept as one number,
-- battle_setups.id, in place of their text: the three (about 16 bytes, "1", "1.9.3.9", "800x600")
-- are the same for nearly every battle of a ladder, and were stored in each battle's row (bytes a
-- battle: scripts/bench_scale.py). A setup is made on its first battle
-- (rumble.store.battle_log.append_battle) and never changes.
--
-- The trigger that names the old columns goes first, as SQLite requires before it drops a column;
-- it comes back naming the new one.

CREATE TABLE battle_setups (
    id INTEGER PRIMARY KEY,
    version TEXT NOT NULL,              -- the upload protocol's version
    client TEXT NOT NULL,               -- Robocode version of the uploading client
    field TEXT NOT NULL,                -- the battlefield, "WIDTHxHEIGHT"
    UNIQUE (version, client, field)
);

DROP TRIGGER battles_append_only_update;

INSERT INTO battle_setups (version, client, field)
SELECT DISTINCT version, client, field FROM battles ORDER BY 1, 2, 3;

ALTER TABLE battles ADD COLUMN setup_id INTEGER REFERENCES battle_setups(id);
UPDATE battles SET setup_id = (
    SELECT s.id FROM battle_setups s
    WHERE s.version = battles.version AND s.client = battles.client AND s.field = battles.field
);
ALTER TABLE battles DROP COLUMN version;
ALTER TABLE battles DROP COLUMN client;
ALTER TABLE battles DROP COLUMN field;

CREATE TRIGGER battles_append_only_update BEFORE UPDATE ON battles
WHEN NEW.id IS NOT OLD.id OR NEW.rumble_id IS NOT OLD.rumble_id OR NEW.setup_id IS NOT OLD.setup_id
  OR NEW.teams IS NOT OLD.teams OR NEW.melee IS NOT OLD.melee
  OR NEW.rounds IS NOT OLD.rounds OR NEW.uploader IS NOT OLD.uploader
  OR NEW.client_time IS NOT OLD.client_time OR NEW.first_bot_id IS NOT OLD.first_bot_id
  OR NEW.first_score IS NOT OLD.first_score OR NEW.first_bullet_damage IS NOT OLD.first_bullet_damage
  OR NEW.first_firsts IS NOT OLD.first_firsts OR NEW.second_bot_id IS NOT OLD.second_bot_id
  OR NEW.second_score IS NOT OLD.second_score OR NEW.second_bullet_damage IS NOT OLD.second_bullet_damage
  OR NEW.second_firsts IS NOT OLD.second_firsts OR NEW.received_at IS NOT OLD.received_at
  OR NEW.address_id IS NOT OLD.address_id
BEGIN
    SELECT RAISE(ABORT, 'the battle log is append-only: only a battle''s state may change');
END;
