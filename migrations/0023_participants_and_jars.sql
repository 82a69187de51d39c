-- The participants lists and the bot jars: rumble serves GET /Participants?game=G and every jar
-- it lists (rumble/web/participants.py), so that a ladder needs no wiki and no jar URL dies.
--
-- None of these tables has a rumble_id column: no rumble export copies them (rumble/store/export.py),
-- and they hold competitors' token hashes and addresses.

-- A competitor's account: a token rmc_<id>_<secret> of its own, separate from the maintainers'
-- (stored as the maintainers' are: the public id and a salted scrypt hash, rumble/store/competitors.py).
-- Revoking keeps the row, so the packages it owns and the audit log's names keep meaning something.
CREATE TABLE competitors (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL UNIQUE,
    token_id TEXT NOT NULL UNIQUE,      -- 16 hex digits, selects the one hash to verify
    token_hash TEXT NOT NULL,           -- 'scrypt$n$r$p$salt$hash' (hex), rumble/admin_tokens.py
    created_at TEXT NOT NULL,           -- server time, UTC, "YYYY-MM-DD HH:MM:SS.mmm"
    created_by TEXT NOT NULL,           -- a maintainer's name, 'cli:<user>', or 'sign-up from <address>'
    remote_addr TEXT,                   -- where a sign-up came from (NULL when a maintainer made it)
    revoked_at TEXT                     -- NULL while the token is valid
);
CREATE INDEX competitors_by_address ON competitors (remote_addr, created_at);

-- Who owns a Java package: the account that first entered a bot in it. Only that account (or a
-- maintainer) enters further bots and versions of that package, or withdraws them.
CREATE TABLE jar_packages (
    package TEXT PRIMARY KEY,           -- the bot's Java package, e.g. 'jk.mega'
    competitor_id INTEGER REFERENCES competitors(id),  -- NULL: entered by a maintainer, owned by none
    created_at TEXT NOT NULL
);

-- One row per bot jar, kept for good: a name and version is bound to one jar (its SHA-256) once
-- and never to another. The jar itself is a BLOB here, so it is in every backup and is written in
-- the same transaction as its entry.
CREATE TABLE jars (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL UNIQUE,          -- "package.Class version" as the jar's .properties / .team names it
    sha256 TEXT NOT NULL,               -- hex; the strong ETag it is served with
    size INTEGER NOT NULL,              -- bytes (the Content-Length it is served with)
    kind TEXT NOT NULL CHECK (kind IN ('robot', 'team')),
    files INTEGER NOT NULL,             -- entries in the archive
    unpacked INTEGER NOT NULL,          -- bytes once every entry is uncompressed (as read, not as the headers say)
    content BLOB NOT NULL,
    created_at TEXT NOT NULL,
    competitor_id INTEGER REFERENCES competitors(id),
    remote_addr TEXT
);

-- An entry: a jar entered into a general rumble's participants list (its mini, micro and nano
-- divisions follow that list, as the stock client configs expect). At most one version of a bot
-- is listed per rumble, and at most one waits for approval; a listed entry that a newer version
-- replaced, or that was withdrawn, stays as history.
CREATE TABLE entries (
    id INTEGER PRIMARY KEY,
    family TEXT NOT NULL,               -- the general game: roborumble, meleerumble, teamrumble, twinduel, ...
    bot_class TEXT NOT NULL,            -- "package.Class" of the jar's name
    package TEXT NOT NULL,              -- its Java package (jar_packages says whose it is)
    jar_id INTEGER NOT NULL REFERENCES jars(id),
    state TEXT NOT NULL CHECK (state IN ('pending', 'listed', 'refused', 'withdrawn', 'replaced')),
    competitor_id INTEGER REFERENCES competitors(id),  -- who entered it (NULL: a maintainer)
    entered_by TEXT NOT NULL,           -- 'competitor NAME' or 'maintainer NAME' / 'cli:<user>'
    remote_addr TEXT,
    created_at TEXT NOT NULL,
    listed_at TEXT,
    ended_at TEXT,                      -- refused, withdrawn or replaced
    ended_by TEXT,
    reason TEXT
);
CREATE UNIQUE INDEX entries_one_listed ON entries (family, bot_class) WHERE state = 'listed';
CREATE UNIQUE INDEX entries_one_pending ON entries (family, bot_class) WHERE state = 'pending';
CREATE INDEX entries_by_state ON entries (family, state, bot_class);
CREATE INDEX entries_by_jar ON entries (jar_id);

-- Every request to enter, withdraw or sign up, refused or not, by address: what the per-address
-- limits count, decided before anything else is read or written. Rows older than 30 days are
-- forgotten as new ones are made.
CREATE TABLE entry_requests (
    id INTEGER PRIMARY KEY,
    at TEXT NOT NULL,
    remote_addr TEXT,
    action TEXT NOT NULL,               -- 'enter', 'withdraw', 'sign-up'
    competitor_id INTEGER,              -- the account that asked, once known
    outcome TEXT NOT NULL               -- 'ok', or the refusal in a few words
);
CREATE INDEX entry_requests_by_address ON entry_requests (remote_addr, action, at);
CREATE INDEX entry_requests_by_account ON entry_requests (competitor_id, action, at);
CREATE INDEX entry_requests_by_time ON entry_requests (at);

-- Whether new entries wait for a maintainer's approval, when a maintainer has said so (else the
-- ENTRIES_NEED_APPROVAL setting decides).
CREATE TABLE entry_policy (
    name TEXT PRIMARY KEY,              -- 'approval'
    value TEXT NOT NULL,                -- '1' or '0'
    set_by TEXT NOT NULL,
    set_at TEXT NOT NULL
);
