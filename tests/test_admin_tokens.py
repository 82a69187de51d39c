"""Maintainer tokens: random, stored only as a salted scrypt hash, checked in constant time."""

from __future__ import annotations

from rumble.admin_tokens import hash_token, new_token, verify_token


def test_a_token_verifies_against_its_hash_and_nothing_else_does():
    token = new_token()
    stored = hash_token(token)
    assert verify_token(token, stored)
    assert not verify_token(token + "x", stored)
    assert not verify_token(new_token(), stored)
    assert not verify_token("", stored)


def test_the_hash_does_not_contain_the_token_and_is_salted():
    token = new_token()
    first, second = hash_token(token), hash_token(token)
    assert token not in first and token.encode().hex() not in first
    assert first != second  # a new salt each time
    assert first.startswith("scrypt$") and verify_token(token, second)


def test_tokens_are_long_and_distinct():
    tokens = {new_token() for _ in range(50)}
    assert len(tokens) == 50 and all(len(t) >= 43 for t in tokens)  # 32 bytes in URL-safe base64


def test_a_malformed_stored_hash_never_verifies():
    for stored in ("", "scrypt$1$2", "md5$16384$8$1$00$00", "scrypt$x$8$1$zz$00"):
        assert not verify_token("anything", stored)


def test_a_known_salt_gives_a_known_hash():
    salt = bytes(16)
    assert hash_token("token", salt) == hash_token("token", salt)
    assert hash_token("token", salt) != hash_token("token2", salt)
