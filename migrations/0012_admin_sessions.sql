-- Administration, part three: tokens with an id, server-side browser sessions, and the log of
-- failed authentication attempts (rumble/web/admin_auth.py, rumble/store/admin_auth.py).

-- A token now reads rmb_<id>_<secret> (rumble/admin_tokens.py). The id is public and selects the
-- one hash to verify, so checking a token costs one scrypt however many maintainers there are.
ALTER TABLE maintainers ADD COLUMN token_id TEXT;
CREATE UNIQUE INDEX maintainers_by_token_id ON maintainers (token_id);

-- Tokens made before this migration have no id: checking one would again cost a scrypt per such
-- maintainer. They are revoked here, each revocation in the audit log, and must be re-issued with
-- `rumble admin create-token NAME` (which needs no token while no maintainer holds a valid one).
INSERT INTO audit_log (who, action, details, battles, at)
SELECT 'migration 0012', 'revoke',
       json_object('maintainer', name, 'reason', 'a token without an id; re-issue it with rumble admin create-token'),
       0, strftime('%Y-%m-%d %H:%M:%f', 'now')
FROM maintainers WHERE revoked_at IS NULL ORDER BY id;
UPDATE maintainers SET revoked_at = strftime('%Y-%m-%d %H:%M:%f', 'now') WHERE revoked_at IS NULL;

-- A browser's login. The cookie carries a random session id; only its SHA-256 is kept here, so a
-- copy of the database opens no session. Logout and revocation set ended_at, and from then on the
-- cookie, replayed or not, opens nothing.
CREATE TABLE admin_sessions (
    id INTEGER PRIMARY KEY,
    session_hash TEXT NOT NULL UNIQUE,  -- sha256 hex of the cookie's session id
    maintainer TEXT NOT NULL,           -- maintainers.name
    created_at TEXT NOT NULL,           -- server time, UTC, "YYYY-MM-DD HH:MM:SS.mmm"
    expires_at TEXT NOT NULL,           -- created_at + ADMIN_SESSION_MINUTES
    ended_at TEXT,                      -- NULL while the session may be used
    ended_why TEXT,                     -- 'logout' or 'revoked'
    remote_addr TEXT                    -- where the login came from
);
CREATE INDEX admin_sessions_by_maintainer ON admin_sessions (maintainer, ended_at);

-- Every failed login, bad bearer token and dead session presented to /admin: from where, when,
-- and what was tried (a token's public id or its length, never the token). It also serves the
-- per-address limit ADMIN_FAILURES_PER_HOUR, which every server worker must see the same way.
CREATE TABLE admin_failures (
    id INTEGER PRIMARY KEY,
    at TEXT NOT NULL,
    remote_addr TEXT,
    kind TEXT NOT NULL,                 -- 'login', 'bearer', 'session' or 'limited' (a 429, logged once an hour)
    tried TEXT NOT NULL,
    path TEXT NOT NULL
);
CREATE INDEX admin_failures_by_addr ON admin_failures (remote_addr, at);
CREATE INDEX admin_failures_by_time ON admin_failures (at);
