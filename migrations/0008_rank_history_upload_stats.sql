-- A daily snapshot of every rumble's standings (rumble/store/history.py), for the bot-details
-- plots of APS, ratings and rank over time. As in XonStat (seed 002), ranks are taken once a day
-- per rumble: the first scheduled job of each UTC day (rumble/schedule/hourly.py scheduled_run) records every
-- active bot's row of the rankings table as it stands then, and a day is never recorded twice.
--
-- The snapshot is NOT derived from the battle log: `rumble rebuild` leaves it alone (replaying
-- the log day by day to recompute it would cost a full rating replay per day). It is history, like
-- batch_runs: what the ladder showed on that day.

CREATE TABLE rank_history (
    rumble_id INTEGER NOT NULL REFERENCES rumbles(id),
    day TEXT NOT NULL,              -- UTC, "YYYY-MM-DD"
    bot_id INTEGER NOT NULL REFERENCES bots(id),
    rank INTEGER NOT NULL,          -- 1-based APS rank among the active bots, ties broken by name
    aps REAL,
    battles INTEGER NOT NULL,
    elo REAL,
    glicko REAL,
    glicko2 REAL,
    rank_points REAL,
    xonstat REAL,
    PRIMARY KEY (rumble_id, bot_id, day)
) WITHOUT ROWID;
CREATE INDEX rank_history_by_day ON rank_history (rumble_id, day);

-- Upload outcomes and server time per UTC day and rumble, for /RumbleStats (rumble/web/upload_stats.py).
-- Each worker counts in memory and adds its counts here in one small transaction every half minute,
-- so an upload pays no extra write: a worker that dies loses at most its last half minute of counts.
-- outcome: accepted, duplicate, refused (answered "OK. ERROR: ..."), error (a server fault, a 500).
-- game is '' where the upload was refused before its game was known.
CREATE TABLE upload_stats (
    day TEXT NOT NULL,                  -- UTC, "YYYY-MM-DD"
    game TEXT NOT NULL,
    outcome TEXT NOT NULL CHECK (outcome IN ('accepted', 'duplicate', 'refused', 'error')),
    uploads INTEGER NOT NULL,
    total_ms REAL NOT NULL,             -- server time from the request to the answer, summed
    max_ms REAL NOT NULL,
    PRIMARY KEY (day, game, outcome)
) WITHOUT ROWID;

-- The latest refusals and faults with their reasons (the newest ERROR_ROWS are kept).
CREATE TABLE upload_errors (
    id INTEGER PRIMARY KEY,
    at TEXT NOT NULL,                   -- UTC, "YYYY-MM-DD HH:MM:SS.mmm"
    outcome TEXT NOT NULL,
    reason TEXT NOT NULL
);
