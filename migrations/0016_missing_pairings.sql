-- The pairings of active participants that have never been played and are not waiting in
-- priority_battles or handed out recently: what the priority chooser asks for first
-- (rumble/ingest/priority.py, rule 1). Kept up to date as bots enter, retire and meet (rumble/ingest.py,
-- rumble/store/missing_pairings.py), so choosing costs an index probe however many pairings are
-- missing. bot_id < opponent_id. draw is a fixed pseudo-random key of the pair in [0, 2^32)
-- (a multiplicative hash, Knuth's 2654435761 and xxHash's 2246822519 primes): the chooser reads
-- the rows from a random key onwards, a random draw in which every pair is about equally likely.
CREATE TABLE missing_pairings (
    rumble_id INTEGER NOT NULL,
    bot_id INTEGER NOT NULL,
    opponent_id INTEGER NOT NULL,
    draw INTEGER NOT NULL,
    PRIMARY KEY (rumble_id, bot_id, opponent_id)
) WITHOUT ROWID;
CREATE INDEX missing_pairings_by_draw ON missing_pairings (rumble_id, draw);
CREATE INDEX missing_pairings_by_opponent ON missing_pairings (rumble_id, opponent_id);

INSERT INTO missing_pairings (rumble_id, bot_id, opponent_id, draw)
SELECT a.rumble_id, a.bot_id, b.bot_id, (a.bot_id * 2654435761 + b.bot_id * 2246822519) % 4294967296
FROM participants a JOIN participants b ON b.rumble_id = a.rumble_id AND b.bot_id > a.bot_id
WHERE a.active = 1 AND b.active = 1
AND NOT EXISTS (SELECT 1 FROM pairings x WHERE x.rumble_id = a.rumble_id AND x.bot_id = a.bot_id AND x.opponent_id = b.bot_id)
AND NOT EXISTS (SELECT 1 FROM priority_battles q WHERE q.rumble_id = a.rumble_id AND q.bot_id = a.bot_id AND q.opponent_id = b.bot_id);
