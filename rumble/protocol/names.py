"""Competitor names: validation and the underscore form used in ratings files and priority lines."""

from __future__ import annotations

import re

from rumble.protocol import ProtocolError

MAX_NAME_LENGTH = 70  # RRServer's limit; the longest name in the 2023 participants list has 43
# The client's own participants-list rule (BotsDownload): `[\w\.]+[ ][\w\.-]+`, ASCII \w.
_NAME = re.compile(r"[A-Za-z0-9_.]+ [A-Za-z0-9_.\-]+")


def check_name(name: str, field: str) -> str:
    """Return ``name`` if it is a valid "package.Class version", else raise ProtocolError."""
    if not name:
        raise ProtocolError(f"{field} is empty")
    if len(name) > MAX_NAME_LENGTH:
        raise ProtocolError(f"{field} is longer than {MAX_NAME_LENGTH} characters")
    if not _NAME.fullmatch(name):
        raise ProtocolError(f"{field} must be 'package.Class version' (letters, digits, _ . - and one space)")
    class_name = name.split(" ", 1)[0]
    if "." not in class_name.strip(".") or class_name.startswith(".") or class_name.endswith("."):
        raise ProtocolError(f"{field} must name a class inside a package, like 'sample.Walls 1.0'")
    return name


def split_name(name: str) -> tuple[str, str, str]:
    """Split "pkg.sub.Class version" into (package, class, version)."""
    class_path, version = name.split(" ", 1)
    package, _, class_name = class_path.rpartition(".")
    return package, class_name, version


def to_key(name: str) -> str:
    """The ratings-file key of a name: the space becomes ``_`` (a space would end a Properties key)."""
    return name.replace(" ", "_")


def key_candidates(key: str) -> list[str]:
    """Names a ratings-file key may stand for, most likely first.

    Each ``_`` in turn may be the former space, the last one first (versions in real lists have
    no ``_``, class names do: ``dcs.Eater_of_Worlds_Mini_1.0``).
    """
    positions = [i for i, ch in enumerate(key) if ch == "_"]
    return [key[:i] + " " + key[i + 1 :] for i in reversed(positions)]


def priority_safe(name: str) -> bool:
    """True if the client can read this name back from a ``[a_v,b_v]`` line.

    The client turns the *last* ``_`` of each item into the space, so the version must not hold one.
    """
    return "_" not in name.split(" ", 1)[1]
