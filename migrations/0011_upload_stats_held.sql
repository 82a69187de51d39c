-- An upload held for review (rumble/plausibility.py) is counted as its own outcome, 'held', instead
-- of as accepted: upload_stats is made again with the wider CHECK, its rows kept.
CREATE TABLE upload_stats_new (
    day TEXT NOT NULL,                  -- UTC, "YYYY-MM-DD"
    game TEXT NOT NULL,
    outcome TEXT NOT NULL CHECK (outcome IN ('accepted', 'held', 'duplicate', 'refused', 'error')),
    uploads INTEGER NOT NULL,
    total_ms REAL NOT NULL,             -- server time from the request to the answer, summed
    max_ms REAL NOT NULL,
    PRIMARY KEY (day, game, outcome)
) WITHOUT ROWID;
INSERT INTO upload_stats_new SELECT day, game, outcome, uploads, total_ms, max_ms FROM upload_stats;
DROP TABLE upload_stats;
ALTER TABLE upload_stats_new RENAME TO upload_stats;
