-- How long uploads took to answer, as a histogram per day, rumble and outcome (the workers' counts,
-- as upload_stats, added by rumble/store/upload_stats.py): the uploads whose server time fell in
-- the bucket up to ``le_ms`` (above the next lower bound; the last bucket's bound is infinity), and
-- their summed time. /metrics shows it as rumble_upload_answer_duration_seconds.
CREATE TABLE upload_answer_times (
    day TEXT NOT NULL,
    game TEXT NOT NULL,
    outcome TEXT NOT NULL,
    le_ms REAL NOT NULL,
    uploads INTEGER NOT NULL,
    total_ms REAL NOT NULL,
    PRIMARY KEY (day, game, outcome, le_ms)
) WITHOUT ROWID;

-- Page, API and export requests answered 503 because the worker's slots for them were full
-- (rumble/web/capacity.py), per day and request class (page, export): the workers' counts.
CREATE TABLE busy_answers (
    day TEXT NOT NULL,
    class TEXT NOT NULL,
    answers INTEGER NOT NULL,
    PRIMARY KEY (day, class)
) WITHOUT ROWID;
