-- Batch rankings (rumble/schedule/hourly.py): Schulze, Ranked Pairs, Copeland, Borda, batch Elo, ANPP and Vote
-- over a rumble's pairing matrix of active bots, run on a schedule and by `rumble rank`.
--
-- History: every run's metadata is kept (batch_runs, a few hundred bytes a run). Ranks are kept
-- for the latest result of each method per rumble only (batch_ranks): a run replaces the rows of
-- the methods it ran, so a `rumble rank --method schulze` leaves the other methods' latest ranks in
-- place, and each row says which run it came from. The per-pairing values are kept for the latest
-- run that computed them (batch_pairings).

CREATE TABLE batch_runs (
    id INTEGER PRIMARY KEY,
    rumble_id INTEGER NOT NULL REFERENCES rumbles(id),
    methods TEXT NOT NULL,              -- the methods run, comma-separated, in rumble.rankings.batch order
    source TEXT NOT NULL,               -- 'schedule' or 'command line'
    started_at TEXT NOT NULL,           -- UTC, "YYYY-MM-DD HH:MM:SS.mmm"
    finished_at TEXT NOT NULL,
    bots INTEGER NOT NULL,              -- bots ranked: the active ones with at least one pairing
    battles INTEGER NOT NULL,           -- the rumble's battles in state 'ok' when the matrix was read
    -- What the run saw, so that "the log changed since" is decidable: the same three numbers as a
    -- worker's in-memory copy of the rumble (rumble/store/ratings.py version()).
    last_battle_id INTEGER NOT NULL,    -- the rumble's newest battle id (0: none)
    last_event_id INTEGER NOT NULL,     -- its newest participant event id (0: none)
    generation INTEGER NOT NULL,        -- rumbles.generation (bumped by a rebuild)
    failures TEXT                       -- "method: reason" lines of methods that raised; NULL if none
);
CREATE INDEX batch_runs_by_rumble ON batch_runs (rumble_id, id);

-- The latest rank (and score, for methods that have one) of each ranked bot under each method.
-- method 'aps' is the APS order of the same matrix, stored with every run as the reference the
-- alternative-rankings page compares the others with.
CREATE TABLE batch_ranks (
    rumble_id INTEGER NOT NULL,
    method TEXT NOT NULL,
    bot_id INTEGER NOT NULL,
    run_id INTEGER NOT NULL REFERENCES batch_runs(id),
    rank INTEGER NOT NULL,              -- 1-based, ties share the best rank (1, 2, 2, 4)
    score REAL,                         -- NULL for Schulze and Ranked Pairs (an order, no number)
    PRIMARY KEY (rumble_id, method, bot_id)
) WITHOUT ROWID;

-- KNNPBI and NPP of each present pairing, one row per bot: `pairings` packs the bot's pairings as
-- little-endian records (opponent_id int32, knnpbi float32, npp float32), 12 bytes each, in
-- opponent id order (numpy dtype [('opponent', '<i4'), ('knnpbi', '<f4'), ('npp', '<f4')]).
-- One row per pairing would be 1.44 M rows at 1,200 bots: rewriting them takes seconds inside the
-- write lock that every upload waits for; 1,200 packed rows take a small fraction of that.
CREATE TABLE batch_pairings (
    rumble_id INTEGER NOT NULL,
    bot_id INTEGER NOT NULL,
    run_id INTEGER NOT NULL REFERENCES batch_runs(id),
    pairings BLOB NOT NULL,
    PRIMARY KEY (rumble_id, bot_id)
) WITHOUT ROWID;
