"""Competitors' accounts (migration 0023): a token of their own, separate from the maintainers'.

A competitor token reads ``rmc_<id>_<secret>`` (``rmb_`` is a maintainer's), made and checked as a
maintainer's is (rumble/admin_tokens.py): the id is 16 random hex digits and selects the one row
whose salted scrypt hash is verified, so a token with an unknown id costs no scrypt. Only the id
and the hash are stored; the token is shown once, to whoever made the account.
"""

from __future__ import annotations

import re
import secrets

from rumble import admin_tokens
from rumble.store import Store, row_id

PREFIX = "rmc_"
_FORM = re.compile(r"rmc_([0-9a-f]{16})_([A-Za-z0-9_-]{43})")
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9 ._@-]{0,39}")  # what an account may be called: shown on pages
COLUMNS = ("id", "name", "created_at", "created_by", "revoked_at")


class CompetitorExists(ValueError):
    """An account of that name exists already."""


def new_token() -> str:
    """A fresh random competitor token ``rmc_<id>_<secret>``, shown once."""
    return f"{PREFIX}{secrets.token_hex(admin_tokens.ID_BYTES)}_{secrets.token_urlsafe(32)}"


def token_id(token: str) -> str | None:
    """The public id of a token of the form ``rmc_<id>_<secret>``, or None for anything else."""
    match = _FORM.fullmatch(token)
    return match.group(1) if match else None


def check_name(name: str) -> str | None:
    """Why ``name`` cannot name an account, or None if it can."""
    if not NAME.fullmatch(name):
        return "an account name is 1 to 40 letters, digits, spaces and . _ @ -, starting with a letter or digit"
    return None


def add(db: Store, name: str, now: str, created_by: str, remote_addr: str | None) -> tuple[int, str]:
    """Make the account ``name`` (caller's transaction): its id and its token, to be shown once.
    CompetitorExists if the name is taken (a revoked account keeps its name)."""
    if db.execute("SELECT 1 FROM competitors WHERE name = ?", (name,)).fetchone() is not None:
        raise CompetitorExists(f"there is already an account called {name!r}")
    token = new_token()
    found = token_id(token)
    assert found is not None
    account = row_id(
        db.execute(
            "INSERT INTO competitors (name, token_id, token_hash, created_at, created_by, remote_addr) "
            "VALUES (?, ?, ?, ?, ?, ?)",
            (name, found, admin_tokens.hash_token(token), now, created_by, remote_addr),
        )
    )
    return account, token


def revoke(db: Store, name: str, now: str) -> bool:
    """Revoke the account's token (caller's transaction); False if there is no such valid account.
    Its packages stay its own: a maintainer still withdraws or enters their versions."""
    cursor = db.execute("UPDATE competitors SET revoked_at = ? WHERE name = ? AND revoked_at IS NULL", (now, name))
    return cursor.rowcount == 1


def accounts(db: Store) -> list[dict]:
    """Every account (never a token or hash), by name."""
    rows = db.execute(f"SELECT {', '.join(COLUMNS)} FROM competitors ORDER BY name").fetchall()
    return [dict(zip(COLUMNS, row)) for row in rows]


def name_of(db: Store, competitor_id: int | None) -> str | None:
    """The name of the account ``competitor_id``, or None."""
    if competitor_id is None:
        return None
    row = db.execute("SELECT name FROM competitors WHERE id = ?", (competitor_id,)).fetchone()
    return row[0] if row else None


def check_token(db: Store, token: str) -> tuple[tuple[int, str] | None, str]:
    """((id, name), '') if ``token`` is a valid competitor token, else (None, what was tried, in
    words that never hold the secret). At most one scrypt: the one hash the token's id selects."""
    found = token_id(token)
    if found is None:
        shown = "a malformed rmc_ token" if token.startswith(PREFIX) else "not a competitor token"
        return None, f"{shown} ({len(token)} characters)"
    row = db.execute(
        "SELECT id, name, token_hash FROM competitors WHERE token_id = ? AND revoked_at IS NULL", (found,)
    ).fetchone()
    if row is None:
        return None, f"competitor token id {found}: no valid token has this id"
    account, name, stored = row
    if not admin_tokens.verify_token(token, stored):
        return None, f"competitor token id {found} ({name}): wrong secret"
    return (account, name), ""


def sign_ups_since(db: Store, remote_addr: str | None, since: str) -> int:
    """Accounts made by sign-up from ``remote_addr`` at or after ``since``."""
    return db.execute(
        "SELECT count(*) FROM competitors WHERE remote_addr IS ? AND created_at >= ?", (remote_addr, since)
    ).fetchone()[0]
