"""Maintainer tokens: random, stored only as a salted scrypt hash, checked in constant time."""

from __future__ import annotations

import re

import pytest

from rumble.admin_tokens import describe, hash_token, new_token, session_hash, token_id, verify_token


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


def test_a_token_reads_rmb_id_secret_and_its_id_is_the_part_after_rmb():
    for _ in range(50):
        token = new_token()
        assert re.fullmatch(r"rmb_[0-9a-f]{16}_[A-Za-z0-9_-]{43}", token)
        assert token_id(token) == token[4:20]
    assert len({token_id(new_token()) for _ in range(50)}) == 50


@pytest.mark.parametrize(
    "presented",
    [
        "",
        "rmb_",
        "rmb_0123456789abcdef_short",
        "rmb_0123456789ABCDEF_" + "a" * 43,
        "rmb_0123456789abcdef_" + "a" * 44,
        "x" + new_token(),
        new_token() + "\n",
        "an old token without an id",
    ],
    ids=["empty", "prefix", "short", "uppercase id", "long secret", "prefixed", "newline", "old"],
)
def test_anything_but_the_exact_form_has_no_id(presented):
    assert token_id(presented) is None


def test_describing_a_token_never_reveals_its_secret():
    token = new_token()
    secret = token[21:]
    assert describe(token) == f"token id {token[4:20]}" and secret not in describe(token)
    assert "secret-part" not in describe("rmb_" + "secret-part")
    assert "my-old-token" not in describe("my-old-token") and "12 characters" in describe("my-old-token")


def test_a_session_id_is_stored_as_its_sha256():
    assert (
        session_hash("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    )  # FIPS 180-2, appendix B.1


def test_a_malformed_stored_hash_never_verifies():
    for stored in ("", "scrypt$1$2", "md5$16384$8$1$00$00", "scrypt$x$8$1$zz$00"):
        assert not verify_token("anything", stored)


def test_a_known_salt_gives_a_known_hash():
    salt = bytes(16)
    assert hash_token("token", salt) == hash_token("token", salt)
    assert hash_token("token", salt) != hash_token("token2", salt)
