-- Every bot's ratings in every rumble, updated with each battle (rumble/ratings/online.py) and
-- recomputed by a rebuild. Derived: a rebuild from the log reproduces every value bit for bit.

CREATE TABLE ratings (
    rumble_id INTEGER NOT NULL,
    bot_id INTEGER NOT NULL,
    elo REAL NOT NULL,                  -- RoboRumble Elo (seed 004), starts at 1600
    glicko REAL NOT NULL,               -- Glicko-1 rating and deviation (seed 001 decay)
    glicko_rd REAL NOT NULL,
    glicko2 REAL NOT NULL,              -- Glicko-2 rating, deviation and volatility (seed 000 bounds)
    glicko2_rd REAL NOT NULL,
    glicko2_volatility REAL NOT NULL,
    rank_points REAL NOT NULL,          -- seed 000's Rank Points over Glicko-2, 0..10000
    xonstat REAL NOT NULL,              -- XonStat Elo (seed 002), per battle
    xonstat_battles INTEGER NOT NULL,   -- battles counted for XonStat's K schedule
    rated_at REAL NOT NULL,             -- receive time of the last battle that rated it, s since 1970 UTC
    PRIMARY KEY (rumble_id, bot_id)
) WITHOUT ROWID;

-- Bumped whenever a rumble's derived tables change other than by a battle (a rebuild, a
-- retirement): each server worker keeps a copy of a rumble's ratings in memory and reloads it
-- when this moves.
ALTER TABLE rumbles ADD COLUMN generation INTEGER NOT NULL DEFAULT 0;
