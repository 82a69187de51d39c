"""Maintainer tokens, pure: make one, hash it for storage, check a presented one against a hash.

A token is 32 random bytes (``secrets.token_urlsafe``); only ``hash_token``'s result is stored.
The hash is scrypt with a per-token random salt, so two maintainers' rows never share a hash and
a stolen database gives no token back. A token carries 256 bits of chance, far beyond guessing,
so scrypt's cost is kept modest (n=2**14, about 16 MB and tens of milliseconds): it guards a
leaked hash, not a weak secret.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets

N, R, P = 2**14, 8, 1  # scrypt's cost: 128 * N * R bytes of memory = 16 MiB
SALT_BYTES = 16
HASH_BYTES = 32


def new_token() -> str:
    """A fresh random token, shown to the maintainer once."""
    return secrets.token_urlsafe(32)


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


def _scrypt(token: str, salt: bytes, n: int, r: int, p: int) -> bytes:
    return hashlib.scrypt(token.encode("utf-8"), salt=salt, n=n, r=r, p=p, maxmem=256 * n * r, dklen=HASH_BYTES)
