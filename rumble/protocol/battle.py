"""The one record every layer shares: a battle result as the client uploaded it."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Side:
    """One competitor's figures over the whole battle (protocol.md section 7.1)."""

    name: str  # "package.Class version", with the space
    score: int  # total score, rounded half up
    bullet_damage: int  # bullet damage score, rounded half up
    firsts: int  # rounds finished first (the protocol's "survival" field)


@dataclass(frozen=True)
class Battle:
    """One uploaded pair result; ``first`` is the better ranked of the two."""

    game: str
    version: str
    client: str
    teams: bool
    melee: bool
    rounds: int
    field: str
    uploader: str
    time_ms: int  # the client's System.currentTimeMillis() when the battle ended
    first: Side
    second: Side
    received_at: str = ""  # server time, "YYYY-MM-DD HH:MM:SS.mmm" UTC, set when received
    remote_addr: str | None = None
    state: str = "ok"  # ok | flagged (held for review) | removed (rolled back); rumble/maintenance/integrity.py
