-- A battle's receive time is kept as whole milliseconds since 1970, UTC (received_ms: 6 bytes), in
-- place of its text "YYYY-MM-DD HH:MM:SS.mmm" (23 bytes and a byte of header) in every row. The text
-- is still there to read as received_at: a virtual column, computed from received_ms when a query
-- reads it and stored nowhere, so every reader and trigger that names it reads the same text as
-- before. A battle is logged with received_ms (rumble.store.battle_log.append_battle); a virtual
-- column cannot be written.
--
-- The log's times are all whole milliseconds (rumble.store.format_time, and the importer, which
-- adds ".000" to a time without them), so the text comes back exactly as it was.
--
-- The triggers that name the old column go first, as SQLite requires before it drops a column;
-- they come back the same, the append-only one naming the new column.

DROP TRIGGER battles_append_only_update;
DROP TRIGGER battles_count_uploads;

ALTER TABLE battles ADD COLUMN received_ms INTEGER;
UPDATE battles SET received_ms =
    CAST(strftime('%s', received_at) AS INTEGER) * 1000 + CAST(substr(received_at, 21, 3) AS INTEGER);
ALTER TABLE battles DROP COLUMN received_at;
ALTER TABLE battles ADD COLUMN received_at TEXT GENERATED ALWAYS AS (
    strftime('%Y-%m-%d %H:%M:%S', received_ms / 1000, 'unixepoch') || '.' || printf('%03d', received_ms % 1000)
) VIRTUAL;

CREATE TRIGGER battles_count_uploads AFTER INSERT ON battles
BEGIN
    INSERT INTO upload_counts (rumble_id, uploader, day, battles, last_upload)
    VALUES (NEW.rumble_id, NEW.uploader, substr(NEW.received_at, 1, 10), 1, NEW.received_at)
    ON CONFLICT (rumble_id, uploader, day)
    DO UPDATE SET battles = battles + 1, last_upload = max(last_upload, excluded.last_upload);
END;

CREATE TRIGGER battles_append_only_update BEFORE UPDATE ON battles
WHEN NEW.id IS NOT OLD.id OR NEW.rumble_id IS NOT OLD.rumble_id OR NEW.setup_id IS NOT OLD.setup_id
  OR NEW.teams IS NOT OLD.teams OR NEW.melee IS NOT OLD.melee
  OR NEW.rounds IS NOT OLD.rounds OR NEW.uploader IS NOT OLD.uploader
  OR NEW.client_time IS NOT OLD.client_time OR NEW.first_bot_id IS NOT OLD.first_bot_id
  OR NEW.first_score IS NOT OLD.first_score OR NEW.first_bullet_damage IS NOT OLD.first_bullet_damage
  OR NEW.first_firsts IS NOT OLD.first_firsts OR NEW.second_bot_id IS NOT OLD.second_bot_id
  OR NEW.second_score IS NOT OLD.second_score OR NEW.second_bullet_damage IS NOT OLD.second_bullet_damage
  OR NEW.second_firsts IS NOT OLD.second_firsts OR NEW.received_ms IS NOT OLD.received_ms
  OR NEW.address_id IS NOT OLD.address_id
BEGIN
    SELECT RAISE(ABORT, 'the battle log is append-only: only a battle''s state may change');
END;
