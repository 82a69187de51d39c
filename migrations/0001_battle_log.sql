-- The battle log and the tables derived from it.
--
-- battles is the append-only log: every accepted upload, never updated except for its state
-- column and never deleted (the triggers below enforce this). pairings and bot_summaries are
-- derived: `rumble rebuild` recomputes them from the log and the participants' active flags.

CREATE TABLE rumbles (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL UNIQUE,          -- the game= name the client sends
    rounds INTEGER NOT NULL,
    field TEXT NOT NULL,                -- WIDTHxHEIGHT
    melee INTEGER NOT NULL,
    teams INTEGER NOT NULL,
    division TEXT NOT NULL,             -- general, mini, micro, nano
    family TEXT NOT NULL,               -- the general game of the division
    created_at TEXT NOT NULL
);

CREATE TABLE bots (
    id INTEGER PRIMARY KEY,
    full_name TEXT NOT NULL UNIQUE,     -- "package.Class version" (a team: "package.Team version")
    package TEXT NOT NULL,
    class_name TEXT NOT NULL,
    version TEXT NOT NULL,
    created_at TEXT NOT NULL
);

-- A bot's membership of a rumble. Retiring (RemoveOldParticipant) sets active = 0; its battles
-- stay in the log and its pairings stop counting; the next upload naming it sets active = 1.
CREATE TABLE participants (
    rumble_id INTEGER NOT NULL REFERENCES rumbles(id),
    bot_id INTEGER NOT NULL REFERENCES bots(id),
    active INTEGER NOT NULL DEFAULT 1,
    first_seen TEXT NOT NULL,
    retired_at TEXT,
    PRIMARY KEY (rumble_id, bot_id)
) WITHOUT ROWID;

CREATE TABLE battles (
    id INTEGER PRIMARY KEY,
    rumble_id INTEGER NOT NULL REFERENCES rumbles(id),
    version TEXT NOT NULL,
    client TEXT NOT NULL,               -- Robocode version of the uploading client
    teams INTEGER NOT NULL,
    melee INTEGER NOT NULL,
    rounds INTEGER NOT NULL,
    field TEXT NOT NULL,
    uploader TEXT NOT NULL,             -- the client's USER
    client_time INTEGER NOT NULL,       -- the client's time= (ms since 1970) when the battle ended
    first_bot_id INTEGER NOT NULL REFERENCES bots(id),
    first_score INTEGER NOT NULL,
    first_bullet_damage INTEGER NOT NULL,
    first_firsts INTEGER NOT NULL,      -- the protocol's fsurvival: rounds finished first
    second_bot_id INTEGER NOT NULL REFERENCES bots(id),
    second_score INTEGER NOT NULL,
    second_bullet_damage INTEGER NOT NULL,
    second_firsts INTEGER NOT NULL,
    received_at TEXT NOT NULL,          -- server time, UTC, "YYYY-MM-DD HH:MM:SS.mmm"
    remote_addr TEXT,
    state TEXT NOT NULL DEFAULT 'ok' CHECK (state IN ('ok', 'flagged', 'removed'))
);

-- A retried upload is the same game, uploader, time, bots and figures: stored once.
CREATE UNIQUE INDEX battles_identity ON battles (
    rumble_id, client_time, uploader, first_bot_id, second_bot_id,
    first_score, second_score, first_bullet_damage, second_bullet_damage, first_firsts, second_firsts
);
CREATE INDEX battles_by_rumble ON battles (rumble_id, id);

CREATE TRIGGER battles_append_only_delete BEFORE DELETE ON battles
BEGIN
    SELECT RAISE(ABORT, 'the battle log is append-only: flag a battle instead of deleting it');
END;

CREATE TRIGGER battles_append_only_update BEFORE UPDATE ON battles
WHEN NEW.id IS NOT OLD.id OR NEW.rumble_id IS NOT OLD.rumble_id OR NEW.version IS NOT OLD.version
  OR NEW.client IS NOT OLD.client OR NEW.teams IS NOT OLD.teams OR NEW.melee IS NOT OLD.melee
  OR NEW.rounds IS NOT OLD.rounds OR NEW.field IS NOT OLD.field OR NEW.uploader IS NOT OLD.uploader
  OR NEW.client_time IS NOT OLD.client_time OR NEW.first_bot_id IS NOT OLD.first_bot_id
  OR NEW.first_score IS NOT OLD.first_score OR NEW.first_bullet_damage IS NOT OLD.first_bullet_damage
  OR NEW.first_firsts IS NOT OLD.first_firsts OR NEW.second_bot_id IS NOT OLD.second_bot_id
  OR NEW.second_score IS NOT OLD.second_score OR NEW.second_bullet_damage IS NOT OLD.second_bullet_damage
  OR NEW.second_firsts IS NOT OLD.second_firsts OR NEW.received_at IS NOT OLD.received_at
  OR NEW.remote_addr IS NOT OLD.remote_addr
BEGIN
    SELECT RAISE(ABORT, 'the battle log is append-only: only a battle''s state may change');
END;

-- Running averages of one bot against one opponent; each pairing is kept from both sides.
-- priority is set on the side with bot_id < opponent_id only: how much one more battle of this
-- pairing is worth (rumble/ingest/priority.py); the priority-battle chooser reads it through the index.
-- It is NULL while the pairing waits in priority_battles or was handed out recently, so the
-- chooser never has to skip over those.
CREATE TABLE pairings (
    rumble_id INTEGER NOT NULL,
    bot_id INTEGER NOT NULL,
    opponent_id INTEGER NOT NULL,
    battles INTEGER NOT NULL,
    aps REAL NOT NULL,                  -- mean battle score %
    aps_m2 REAL NOT NULL,               -- Welford's sum of squared deviations of the score %
    survival REAL NOT NULL,             -- mean survival % (firsts / rounds)
    last_battle TEXT NOT NULL,
    priority REAL,
    PRIMARY KEY (rumble_id, bot_id, opponent_id)
) WITHOUT ROWID;
CREATE INDEX pairings_by_priority ON pairings (rumble_id, priority DESC) WHERE priority IS NOT NULL;

-- Exact sums over each bot's live pairings (rumble/rankings/scores.py Totals), and the columns
-- computed from them. The sums are integers too large for SQLite's 64 bits, so they are hex text.
CREATE TABLE bot_summaries (
    rumble_id INTEGER NOT NULL,
    bot_id INTEGER NOT NULL,
    pairings INTEGER NOT NULL,
    battles INTEGER NOT NULL,
    aps_exact TEXT NOT NULL,            -- Σ pairing APS as an exact integer in units of 2^-1074, hex
    survival_exact TEXT NOT NULL,       -- Σ pairing survival, likewise
    wins INTEGER NOT NULL,
    draws INTEGER NOT NULL,
    losses INTEGER NOT NULL,
    ci_count INTEGER NOT NULL,
    ci_exact TEXT NOT NULL,             -- Σ Var_p/(n_p - 1), likewise
    aps REAL,
    aps_ci REAL,
    survival REAL,
    pl INTEGER NOT NULL,
    pwin REAL,
    last_battle TEXT NOT NULL,
    PRIMARY KEY (rumble_id, bot_id)
) WITHOUT ROWID;
CREATE INDEX bot_summaries_by_pairings ON bot_summaries (rumble_id, pairings);

-- Priority battles waiting to be handed to a client ([a_v,b_v] answer lines). Rows stay after
-- they are handed out (handed_out_at set) so the same pairing is not handed out again at once.
CREATE TABLE priority_battles (
    id INTEGER PRIMARY KEY,
    rumble_id INTEGER NOT NULL,
    bot_id INTEGER NOT NULL,
    opponent_id INTEGER NOT NULL,
    reason TEXT NOT NULL,               -- missing, few battles, uncertain
    created_at TEXT NOT NULL,
    handed_out_at TEXT
);
CREATE INDEX priority_waiting ON priority_battles (rumble_id, handed_out_at, id);
CREATE INDEX priority_pair ON priority_battles (rumble_id, bot_id, opponent_id);
