-- Administration: maintainers and their tokens, the audit log of every admin action, and the
-- server's own secrets.
--
-- A maintainer's token is never stored, only its salted hash (rumble/admin_tokens.py), so a copy
-- of the database does not hand out admin access. Revoking keeps the row (revoked_at set), so the
-- audit log's names keep meaning something.

CREATE TABLE maintainers (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL UNIQUE,
    token_hash TEXT NOT NULL,           -- 'scrypt$n$r$p$salt$hash' (hex), see rumble/admin_tokens.py
    created_at TEXT NOT NULL,
    revoked_at TEXT                     -- NULL while the token is valid
);

-- Who did what, when, and how many battles it touched. Append-only, like the battle log.
CREATE TABLE audit_log (
    id INTEGER PRIMARY KEY,
    who TEXT NOT NULL,                  -- a maintainer's name, or 'cli:<user>' for the command line
    action TEXT NOT NULL,               -- e.g. 'retire', 'restore', 'login', 'create-token'
    details TEXT NOT NULL DEFAULT '{}', -- JSON object
    battles INTEGER NOT NULL DEFAULT 0, -- battles whose effect the action changed
    at TEXT NOT NULL
);

CREATE TRIGGER audit_log_append_only_delete BEFORE DELETE ON audit_log
BEGIN
    SELECT RAISE(ABORT, 'the audit log is append-only');
END;

CREATE TRIGGER audit_log_append_only_update BEFORE UPDATE ON audit_log
BEGIN
    SELECT RAISE(ABORT, 'the audit log is append-only');
END;

-- Values the server generates once per database and every worker must share, never kept in the
-- repository: the Flask SECRET_KEY that signs admin session cookies. randomblob() draws from
-- SQLite's CSPRNG, seeded from the operating system.
CREATE TABLE secrets (
    name TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
INSERT INTO secrets (name, value) VALUES ('flask_secret_key', lower(hex(randomblob(32))));
