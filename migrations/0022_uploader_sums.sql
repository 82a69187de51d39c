-- What the uploader statistics read instead of the battle log (rumble/store/uploader_sums.py): per
-- rumble, uploader, pairing and address, the accepted battles' count and the exact sums of their
-- percentages and of the squares, so that the consistency table, the standings and the rollback
-- preview cost what the uploaders' pairings cost, not what the whole log does.
--
-- A pairing's bots are taken in name order (bot_a's full name sorts first), as the statistics are.
-- A battle's percentage x (its share of the score, or of the rounds in a rumble scored by survival,
-- computed with the same IEEE operations as rumble.rankings.scores) is added as the integer
-- floor(x * 2^77), its square x * x as floor(x * x * 2^102): exact for every percentage whose
-- battle scored less than 2^31 points in all, so the sums depend only on which battles count, never on
-- the order they arrived, left or came back in. Each sum is kept in 32-bit limbs (share_a2 counts
-- 2^64 units, share_a1 2^32, share_a0 1), so no column can overflow before 2^31 battles.
--
-- The addresses are numbers here: the address table has no rumble_id column, so a rumble's public
-- SQLite export (rumble/store/export.py) leaves it out, as it leaves out the battles' addresses.
CREATE TABLE uploader_addresses (
    id INTEGER PRIMARY KEY,
    remote_addr TEXT NOT NULL UNIQUE    -- '' for a battle without an address
);

CREATE TABLE uploader_sums (
    rumble_id INTEGER NOT NULL,
    uploader TEXT NOT NULL,
    bot_a INTEGER NOT NULL,
    bot_b INTEGER NOT NULL,
    address_id INTEGER NOT NULL,        -- uploader_addresses.id
    battles INTEGER NOT NULL,
    share_a2 INTEGER NOT NULL,          -- Σ floor(x_a * 2^77), bot_a's percentage
    share_a1 INTEGER NOT NULL,
    share_a0 INTEGER NOT NULL,
    share_b2 INTEGER NOT NULL,          -- Σ floor(x_b * 2^77), bot_b's percentage
    share_b1 INTEGER NOT NULL,
    share_b0 INTEGER NOT NULL,
    square_a3 INTEGER NOT NULL,         -- Σ floor(x_a * x_a * 2^102)
    square_a2 INTEGER NOT NULL,
    square_a1 INTEGER NOT NULL,
    square_a0 INTEGER NOT NULL,
    PRIMARY KEY (rumble_id, bot_a, bot_b, uploader, address_id)
) WITHOUT ROWID;
-- Rows whose last battle left (a rollback, a hold): found at once and deleted.
CREATE INDEX uploader_sums_emptied ON uploader_sums (rumble_id) WHERE battles = 0;

-- One row per logged battle: its key in uploader_sums and its terms, whatever its state.
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
                SELECT x.id, x.rumble_id, x.state, x.uploader, d.id AS address_id, x.first_bot_id, x.second_bot_id,
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
                JOIN rumbles r ON r.id = x.rumble_id
                JOIN bots fa ON fa.id = x.first_bot_id
                JOIN bots fb ON fb.id = x.second_bot_id
                JOIN uploader_addresses d ON d.remote_addr = IFNULL(x.remote_addr, '')
            )
        )
    )
);

-- Each accepted battle is added as it is logged, in its upload's transaction. A battle that leaves
-- state 'ok' or enters it later (a hold, a rollback, an unflag) is taken out or added by the
-- maintenance job that moves it (rumble.maintenance.swap), and a rebuild fills a rumble's rows afresh.
CREATE TRIGGER battles_uploader_sums AFTER INSERT ON battles WHEN NEW.state = 'ok'
BEGIN
    INSERT OR IGNORE INTO uploader_addresses (remote_addr) VALUES (IFNULL(NEW.remote_addr, ''));
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

INSERT INTO uploader_addresses (remote_addr) SELECT DISTINCT IFNULL(remote_addr, '') FROM battles ORDER BY 1;

INSERT INTO uploader_sums (rumble_id, uploader, bot_a, bot_b, address_id, battles,
    share_a2, share_a1, share_a0, share_b2, share_b1, share_b0, square_a3, square_a2, square_a1, square_a0)
SELECT rumble_id, uploader, bot_a, bot_b, address_id, count(*),
    sum(share_a2), sum(share_a1), sum(share_a0), sum(share_b2), sum(share_b1), sum(share_b0),
    sum(square_a3), sum(square_a2), sum(square_a1), sum(square_a0)
FROM uploader_battle_terms WHERE state = 'ok' GROUP BY rumble_id, bot_a, bot_b, uploader, address_id;
