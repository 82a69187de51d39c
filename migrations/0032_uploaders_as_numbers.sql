-- A battle's uploader (the client's USER) is kept as a number, battles.uploader_id, naming a row of
-- uploaders, in place of its text: the text (about 10 bytes, the same for every upload of one
-- uploader) was stored in each battle's row (bytes a battle: scripts/bench_scale.py); the number
-- takes a byte or two. An uploader is made on its first battle (rumble.store.battle_log.append_battle)
-- and never changes. Readers of the log join uploaders for the name. The per-uploader tables that
-- are small beside the log (upload_counts, uploader_sums, melee_battles) keep the name.
--
-- The view and the triggers that name the old column go first, as SQLite requires before it drops
-- a column; they come back naming the new one (the upload counts and the uploader statistics' sums
-- read the name through uploaders).

CREATE TABLE uploaders (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL UNIQUE           -- the client's USER
);

DROP TRIGGER battles_uploader_sums;
DROP VIEW uploader_battle_terms;
DROP TRIGGER battles_count_uploads;
DROP TRIGGER battles_append_only_update;

INSERT INTO uploaders (name) SELECT DISTINCT uploader FROM battles ORDER BY 1;

ALTER TABLE battles ADD COLUMN uploader_id INTEGER REFERENCES uploaders(id);
UPDATE battles SET uploader_id = (SELECT u.id FROM uploaders u WHERE u.name = battles.uploader);
ALTER TABLE battles DROP COLUMN uploader;

CREATE VIEW uploader_battle_terms AS
SELECT id, rumble_id, state, uploader, address_id, bot_a, bot_b,
    ya_hi >> 32 AS share_a2, ya_hi & 4294967295 AS share_a1, CAST((ya - ya_hi) * 4294967296.0 AS INTEGER) AS share_a0,
    yb_hi >> 32 AS share_b2, yb_hi & 4294967295 AS share_b1, CAST((yb - yb_hi) * 4294967296.0 AS INTEGER) AS share_b0,
    zq_hi >> 32 AS square_a3, zq_hi & 4294967295 AS square_a2, CAST(gq AS INTEGER) AS square_a1,
    CAST((gq - CAST(gq AS INTEGER)) * 4294967296.0 AS INTEGER) AS square_a0
FROM (
    SELECT *, CAST(ya AS INTEGER) AS ya_hi, CAST(yb AS INTEGER) AS yb_hi, CAST(zq AS INTEGER) AS zq_hi,
        (zq - CAST(zq AS INTEGER)) * 4294967296.0 AS gq
    FROM (
        -- x * 2^45 and x * x * 2^38 are exact (a power of two) and below 2^52: their integer parts
        -- are the upper limbs, their fractions times 2^32 (twice for the square) the lower ones
        SELECT *, xa * 35184372088832.0 AS ya, xb * 35184372088832.0 AS yb, xa * xa * 274877906944.0 AS zq
        FROM (
            SELECT id, rumble_id, state, uploader, address_id,
                CASE WHEN in_order THEN first_bot_id ELSE second_bot_id END AS bot_a,
                CASE WHEN in_order THEN second_bot_id ELSE first_bot_id END AS bot_b,
                CASE WHEN in_order THEN p1 ELSE p2 END AS xa,
                CASE WHEN in_order THEN p2 ELSE p1 END AS xb
            FROM (
                SELECT x.id, x.rumble_id, x.state, u.name AS uploader,
                    IFNULL(x.address_id, (SELECT d.id FROM uploader_addresses d WHERE d.remote_addr = '')) AS address_id,
                    x.first_bot_id, x.second_bot_id,
                    fa.full_name < fb.full_name AS in_order,
                    CASE
                        WHEN r.scoring = 'survival' THEN CASE WHEN x.rounds > 0 THEN 100.0 * x.first_firsts / x.rounds ELSE 0.0 END
                        WHEN x.first_score + x.second_score = 0 THEN 50.0
                        ELSE 100.0 * x.first_score / (x.first_score + x.second_score)
                    END AS p1,
                    CASE
                        WHEN r.scoring = 'survival' THEN CASE WHEN x.rounds > 0 THEN 100.0 * x.second_firsts / x.rounds ELSE 0.0 END
                        WHEN x.first_score + x.second_score = 0 THEN 50.0
                        ELSE 100.0 * x.second_score / (x.first_score + x.second_score)
                    END AS p2
                FROM battles x
                JOIN uploaders u ON u.id = x.uploader_id
                JOIN rumbles r ON r.id = x.rumble_id
                JOIN bots fa ON fa.id = x.first_bot_id
                JOIN bots fb ON fb.id = x.second_bot_id
            )
        )
    )
);

CREATE TRIGGER battles_uploader_sums AFTER INSERT ON battles WHEN NEW.state = 'ok'
BEGIN
    INSERT INTO uploader_sums (rumble_id, uploader, bot_a, bot_b, address_id, battles,
        share_a2, share_a1, share_a0, share_b2, share_b1, share_b0, square_a3, square_a2, square_a1, square_a0)
    SELECT rumble_id, uploader, bot_a, bot_b, address_id, 1,
        share_a2, share_a1, share_a0, share_b2, share_b1, share_b0, square_a3, square_a2, square_a1, square_a0
    FROM uploader_battle_terms WHERE id = NEW.id
    ON CONFLICT (rumble_id, bot_a, bot_b, uploader, address_id) DO UPDATE SET
        battles = battles + excluded.battles,
        share_a2 = share_a2 + excluded.share_a2, share_a1 = share_a1 + excluded.share_a1,
        share_a0 = share_a0 + excluded.share_a0, share_b2 = share_b2 + excluded.share_b2,
        share_b1 = share_b1 + excluded.share_b1, share_b0 = share_b0 + excluded.share_b0,
        square_a3 = square_a3 + excluded.square_a3, square_a2 = square_a2 + excluded.square_a2,
        square_a1 = square_a1 + excluded.square_a1, square_a0 = square_a0 + excluded.square_a0;
END;

CREATE TRIGGER battles_count_uploads AFTER INSERT ON battles
BEGIN
    INSERT INTO upload_counts (rumble_id, uploader, day, battles, last_upload)
    VALUES (NEW.rumble_id, (SELECT name FROM uploaders WHERE id = NEW.uploader_id), substr(NEW.received_at, 1, 10),
        1, NEW.received_at)
    ON CONFLICT (rumble_id, uploader, day)
    DO UPDATE SET battles = battles + 1, last_upload = max(last_upload, excluded.last_upload);
END;

CREATE TRIGGER battles_append_only_update BEFORE UPDATE ON battles
WHEN NEW.id IS NOT OLD.id OR NEW.rumble_id IS NOT OLD.rumble_id OR NEW.setup_id IS NOT OLD.setup_id
  OR NEW.teams IS NOT OLD.teams OR NEW.melee IS NOT OLD.melee
  OR NEW.rounds IS NOT OLD.rounds OR NEW.uploader_id IS NOT OLD.uploader_id
  OR NEW.client_time IS NOT OLD.client_time OR NEW.first_bot_id IS NOT OLD.first_bot_id
  OR NEW.first_score IS NOT OLD.first_score OR NEW.first_bullet_damage IS NOT OLD.first_bullet_damage
  OR NEW.first_firsts IS NOT OLD.first_firsts OR NEW.second_bot_id IS NOT OLD.second_bot_id
  OR NEW.second_score IS NOT OLD.second_score OR NEW.second_bullet_damage IS NOT OLD.second_bullet_damage
  OR NEW.second_firsts IS NOT OLD.second_firsts OR NEW.received_ms IS NOT OLD.received_ms
  OR NEW.address_id IS NOT OLD.address_id
BEGIN
    SELECT RAISE(ABORT, 'the battle log is append-only: only a battle''s state may change');
END;
