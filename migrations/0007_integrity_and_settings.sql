-- Integrity and administration, part two: why a battle was flagged on arrival, the settings
-- maintainers edit from /admin, and the log of the client's RemoveOldParticipant requests.

-- A battle the plausibility check (rumble/plausibility.py) found suspicious is logged in state
-- 'flagged' (it does not count until a maintainer unflags it) and its reason is kept here.
CREATE TABLE battle_flags (
    battle_id INTEGER PRIMARY KEY REFERENCES battles(id),
    reason TEXT NOT NULL,
    flagged_at TEXT NOT NULL
);

-- Settings edited by maintainers; they take precedence over the settings file and RUMBLE_*
-- variables. scope is 'server' for a server setting (name: ACCEPTED_CLIENTS) or a rumble's name
-- for one of its settings. value is JSON. Every change is also in the audit log.
CREATE TABLE admin_settings (
    scope TEXT NOT NULL,
    name TEXT NOT NULL,
    value TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    updated_by TEXT NOT NULL,
    PRIMARY KEY (scope, name)
) WITHOUT ROWID;

-- Every RemoveOldParticipant request: from where, about what, and what became of it. It also
-- serves the rate limit, which every server worker must see the same way.
CREATE TABLE removal_requests (
    id INTEGER PRIMARY KEY,
    at TEXT NOT NULL,                   -- server time, UTC, "YYYY-MM-DD HH:MM:SS.mmm"
    remote_addr TEXT,
    user_agent TEXT,
    game TEXT NOT NULL,
    name TEXT NOT NULL,                 -- the ratings-file key the client sent
    outcome TEXT NOT NULL               -- retired, already retired, unknown bot, unknown game, rate limited
);
CREATE INDEX removal_requests_by_addr ON removal_requests (remote_addr, at);
