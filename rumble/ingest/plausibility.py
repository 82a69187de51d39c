"""Plausibility of an upload's figures, pure: RRServer's score sanity checks, scaled to each rumble.

RRServer (peers.md section 2) refused 1v1 results unless ``survival1 + survival2 >= 34`` of 35
rounds and each score was at most 10000. rumble keeps those limits but scales them with the
rumble's rounds, and does not refuse: a battle that fails one is logged in state 'flagged', so it
counts nowhere until a maintainer unflags it (approves it) or rolls it back, and it is listed on
/admin with the reason. A refusal would make an honest client with an odd battle drop it; a flag
loses nothing and keeps a suspicious result out of the ladder.

The checks, in order (the first that fails is the reason):

1. Each side's bullet damage score is part of its total score (Robocode adds it in), so it can
   never exceed it, whatever the game.
2. 1v1 only: a robot scores at most ``10000 / 35`` points a round on average (RRServer's 10000
   over 35 rounds), so at most ``10000 * rounds / 35`` in a battle.
3. 1v1 only: every round ends with one robot finishing first (both, when they die together), so
   the firsts add up to at least the rounds; RRServer allowed one round of slack in 35, which
   scales to ``ceil(rounds / 35)`` rounds.

Melee pair results (a bot's firsts are its wins over nine other robots) and team scores (five
robots scoring together) do not follow rules 2 and 3, so only rule 1 applies to them.
"""

from __future__ import annotations

import math

from rumble.protocol.battle import Battle

RRSERVER_MAX_SCORE = 10_000  # per battle of RRSERVER_ROUNDS rounds
RRSERVER_ROUNDS = 35


def max_score(rounds: int) -> int:
    """The highest plausible 1v1 score in a battle of ``rounds`` rounds (10000 at 35)."""
    return RRSERVER_MAX_SCORE * rounds // RRSERVER_ROUNDS


def min_firsts(rounds: int) -> int:
    """The fewest plausible firsts of both robots together (34 at 35 rounds)."""
    return rounds - math.ceil(rounds / RRSERVER_ROUNDS)


def suspicion(battle: Battle) -> str | None:
    """Why ``battle``'s figures are implausible, in plain words, or None if they are plausible."""
    for side in (battle.first, battle.second):
        if side.bullet_damage > side.score:
            return f"{side.name}'s bullet damage {side.bullet_damage} exceeds its total score {side.score}"
    if battle.melee or battle.teams:
        return None
    ceiling = max_score(battle.rounds)
    for side in (battle.first, battle.second):
        if side.score > ceiling:
            return f"{side.name}'s score {side.score} is above {ceiling}, the most a robot scores in {battle.rounds} rounds"
    floor = min_firsts(battle.rounds)
    if battle.first.firsts + battle.second.firsts < floor:
        return (
            f"the robots finished first in {battle.first.firsts} + {battle.second.firsts} rounds, "
            f"fewer than {floor} of {battle.rounds}"
        )
    return None
