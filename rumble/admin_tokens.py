"""Maintainer tokens, pure: make one, split off its public id, hash it for storage, check a
presented one against a hash.

A token reads ``rmb_<id>_<secret>``: the id is 16 random hex digits, public (it names the token in
the failure log and selects its row), the secret 32 random bytes (``secrets.token_urlsafe``). Only
the id and ``hash_token``'s result are stored. The hash is scrypt, over the whole token, with a
per-token random salt, so two maintainers' rows never share a hash and a stolen database gives no
token back. A token carries 256 bits of chance, far beyond guessing, so scrypt's cost is kept
modest (n=2**14, about 16 MB and tens of milliseconds): it guards a leaked hash, not a weak secret.

The id is why checking a token costs one scrypt at most, however many maintainers there are: it
selects the one hash to verify, and a token whose id is unknown (or that has none) costs none.
Tokens made before migration 0012 had no id; that migration revokes them (README, Administration).
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets

N, R, P = 2**14, 8, 1  # scrypt's cost: 128 * N * R bytes of memory = 16 MiB
SALT_BYTES = 16
HASH_BYTES = 32
PREFIX = "rmb_"
ID_BYTES = 8  # 16 hex digits: ids are unique by a UNIQUE index; 64 bits make a clash (and a retry) unlikely
_FORM = re.compile(r"rmb_([0-9a-f]{16})_([A-Za-z0-9_-]{43})")


def new_token() -> str:
    """A fresh random token ``rmb_<id>_<secret>``, shown to the maintainer once."""
    return f"{PREFIX}{secrets.token_hex(ID_BYTES)}_{secrets.token_urlsafe(32)}"


def token_id(token: str) -> str | None:
    """The public id of a token of the form ``rmb_<id>_<secret>``, or None for anything else."""
    match = _FORM.fullmatch(token)
    return match.group(1) if match else None


def describe(token: str) -> str:
    """What a presented token looked like, for the failure log, never revealing its secret:
    its id when it has the token form, else only its length."""
    found = token_id(token)
    if found is not None:
        return f"token id {found}"
    if token.startswith(PREFIX):
        return f"a malformed rmb_ token ({len(token)} characters)"
    return f"a token without an id ({len(token)} characters; tokens made before migration 0012 must be re-issued)"


def hash_token(token: str, salt: bytes | None = None) -> str:
    """The storable form of ``token``: 'scrypt$n$r$p$<salt hex>$<hash hex>' with a new salt."""
    salt = secrets.token_bytes(SALT_BYTES) if salt is None else salt
    digest = _scrypt(token, salt, N, R, P)
    return f"scrypt${N}${R}${P}${salt.hex()}${digest.hex()}"


def verify_token(token: str, stored: str) -> bool:
    """True if ``token`` is the one ``stored`` was made from (a constant-time comparison)."""
    try:
        scheme, n, r, p, salt, digest = stored.split("$")
        if scheme != "scrypt":
            return False
        expected = bytes.fromhex(digest)
        found = _scrypt(token, bytes.fromhex(salt), int(n), int(r), int(p))
    except ValueError:
        return False
    return hmac.compare_digest(found, expected)


def session_hash(session_id: str) -> str:
    """The stored form of a browser session's random id: its SHA-256 (hex). The id carries 256
    bits of chance, so a fast hash is enough; a copy of the database then opens no session."""
    return hashlib.sha256(session_id.encode("utf-8")).hexdigest()


def new_session_id() -> str:
    """A fresh random session id for the admin cookie."""
    return secrets.token_urlsafe(32)


def _scrypt(token: str, salt: bytes, n: int, r: int, p: int) -> bytes:
    return hashlib.scrypt(token.encode("utf-8"), salt=salt, n=n, r=r, p=p, maxmem=256 * n * r, dklen=HASH_BYTES)
