-- Melee battles reassembled from their pair uploads, and the ratings of whole melee battles
-- (rumble/ingest/melee.py): Weng-Lin (Plackett-Luce) and multi-bot XonStat Elo; and how a rumble scores
-- a battle (twin duel by rounds won).
--
-- The client uploads one melee battle as up to 45 pair results (protocol.md 7.5); the pairs are
-- logged and scored as pairings like any upload, and also gathered here into the battle they came
-- from. A battle is rated once, when it is closed. Everything here is derived from the battle log:
-- `rumble rebuild` clears a rumble's rows and replays the log through the same code.

-- One reassembled battle. Its id is the log id of the first pair that opened it, so a rebuild
-- gives every battle the same id again.
CREATE TABLE melee_battles (
    id INTEGER PRIMARY KEY,
    rumble_id INTEGER NOT NULL REFERENCES rumbles(id),
    uploader TEXT NOT NULL,
    first_time INTEGER NOT NULL,        -- the earliest and latest client time= of its pairs (ms)
    last_time INTEGER NOT NULL,
    last_received TEXT NOT NULL,        -- the latest receive time of its pairs: the battle's time
    pairs INTEGER NOT NULL,             -- pairs gathered before it was rated
    late_pairs INTEGER NOT NULL DEFAULT 0,  -- pairs that arrived after it was rated (not rated again)
    state TEXT NOT NULL CHECK (state IN ('open', 'rated')),
    closed_by TEXT,                     -- complete | timeout
    closed_after_battle_id INTEGER      -- the log id being applied when it was closed
);
CREATE INDEX melee_battles_open ON melee_battles (rumble_id, state, uploader);
CREATE INDEX melee_battles_by_time ON melee_battles (rumble_id, uploader, last_time);

-- Each bot of a reassembled battle with its whole-battle figures and what the battle did to its
-- ratings (NULL until the battle is rated). rank: 1 for the best score, equal scores share a rank.
CREATE TABLE melee_entries (
    melee_battle_id INTEGER NOT NULL REFERENCES melee_battles(id),
    bot_id INTEGER NOT NULL REFERENCES bots(id),
    score INTEGER NOT NULL,
    bullet_damage INTEGER NOT NULL,
    firsts INTEGER NOT NULL,
    rank INTEGER,
    mu_before REAL,
    sigma_before REAL,                  -- after the inactivity growth, as the battle used it
    mu_after REAL,
    sigma_after REAL,
    xonstat_before REAL,
    xonstat_after REAL,
    PRIMARY KEY (melee_battle_id, bot_id)
) WITHOUT ROWID;
CREATE INDEX melee_entries_by_bot ON melee_entries (bot_id);

-- Which reassembled battle each logged pair belongs to.
CREATE TABLE melee_pairs (
    battle_id INTEGER PRIMARY KEY REFERENCES battles(id),
    melee_battle_id INTEGER NOT NULL REFERENCES melee_battles(id),
    late INTEGER NOT NULL DEFAULT 0     -- 1: arrived after its battle was rated
);
CREATE INDEX melee_pairs_by_battle ON melee_pairs (melee_battle_id);

-- Each bot's ratings from whole melee battles.
CREATE TABLE melee_ratings (
    rumble_id INTEGER NOT NULL REFERENCES rumbles(id),
    bot_id INTEGER NOT NULL REFERENCES bots(id),
    mu REAL NOT NULL,                   -- Weng-Lin (Plackett-Luce) skill and its deviation
    sigma REAL NOT NULL,
    rated_at REAL NOT NULL,             -- time of its last rated battle, s since 1970 UTC
    battles INTEGER NOT NULL,           -- rated melee battles
    xonstat REAL NOT NULL,              -- XonStat Elo, the mean of its pairwise changes per battle
    PRIMARY KEY (rumble_id, bot_id)
) WITHOUT ROWID;

-- Timeouts applied by the server's schedule rather than by an upload (rumble.ingest.melee.sweep): a record,
-- like participant_events, because it depends on the clock. Written only when a sweep closed a
-- battle; a rebuild replays each one after battle after_battle_id. Append-only.
CREATE TABLE melee_sweeps (
    id INTEGER PRIMARY KEY,
    rumble_id INTEGER NOT NULL REFERENCES rumbles(id),
    after_battle_id INTEGER NOT NULL,   -- the rumble's highest battle id when the sweep ran
    swept_at TEXT NOT NULL              -- the server's time then, "YYYY-MM-DD HH:MM:SS.mmm" UTC
);
CREATE INDEX melee_sweeps_by_rumble ON melee_sweeps (rumble_id, id);

CREATE TRIGGER melee_sweeps_append_only_delete BEFORE DELETE ON melee_sweeps
BEGIN
    SELECT RAISE(ABORT, 'melee sweeps are append-only');
END;

CREATE TRIGGER melee_sweeps_append_only_update BEFORE UPDATE ON melee_sweeps
BEGIN
    SELECT RAISE(ABORT, 'melee sweeps are append-only');
END;

-- What a rumble's battle percentages come from (rumble/rumbles.toml `scoring`): 'score', the share of
-- the total scores, or 'survival', the share of rounds won, as twin duel is scored (RRServer).
ALTER TABLE rumbles ADD COLUMN scoring TEXT NOT NULL DEFAULT 'score';
