-- Maintenance jobs (rumble/maintenance/jobs.py): a rebuild, flag, rollback or unflag asked for at
-- /admin runs as a process of its own (`rumble run-job ID`), outside the request, and this row is
-- how /admin follows it. The job's own effect is audited in the audit log when it is swapped in.
CREATE TABLE jobs (
    id INTEGER PRIMARY KEY,
    kind TEXT NOT NULL,                 -- rebuild, flag, rollback, unflag
    args TEXT NOT NULL DEFAULT '{}',    -- JSON object: what to do and for whom (game, criteria, requested by)
    state TEXT NOT NULL DEFAULT 'queued' CHECK (state IN ('queued', 'running', 'done', 'failed')),
    progress TEXT NOT NULL DEFAULT '',  -- e.g. 'roborumble: 120000 of 719400 battles replayed'
    requested_by TEXT NOT NULL,
    pid INTEGER,                        -- the process running it, to tell a dead job from a slow one
    created TEXT NOT NULL,
    started TEXT,
    finished TEXT,
    result TEXT,                        -- JSON object, when done
    error TEXT                          -- why it failed
);
CREATE INDEX jobs_by_state ON jobs (state, id);

-- What each rumble's latest maintenance swap rewrote (rumble/maintenance/swap.py), so that a server
-- worker whose in-memory copy of the field is one generation behind catches up on those pairings
-- (and every bot's ratings and active flag) instead of reading the whole rumble again.
CREATE TABLE field_swaps (
    rumble_id INTEGER PRIMARY KEY REFERENCES rumbles(id),
    generation INTEGER NOT NULL,        -- the generation the swap made
    pairs TEXT                          -- JSON [[bot, opponent], ...] (bot < opponent) of the pairings written or deleted; NULL: too many, reload
);
