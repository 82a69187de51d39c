"""Rank Points: INVERSUS's player-facing score on top of Glicko-2 (seed 000, after the C++ listing).

The rules, in the seed's order:

1. The functional rating is the lower end of the 99.7 % interval, r - 3·RD.
2. The rating bounds [R_MIN, R_MAX] (an unrated bot's 99.7 % range) map linearly onto 0..10000,
   clamped at both ends: an unrated bot's functional rating is R_MIN, i.e. 0 Rank Points, and every
   bot starts at 0.
3. After each battle RP steps halfway from its current value towards that target.
4. RP goes up only on a win and down only on a loss. A battle whose score share is above 0.5 is a
   win, below 0.5 a loss; at exactly 0.5 it is neither, so RP does not move (the seed's game has
   no draws; "up only on a win and down only on a loss" leaves a draw no direction to move in).
5. A win gains at least 1 point and a loss costs at least 1, even where the half step points the
   other way; no battle moves RP by more than 500.
6. A win never takes RP past the upper end of the 99.7 % interval, r + 3·RD, nor past 10000 (the
   seed: "unless it will step you past the upper end ... or the 10000 limit"); at that ceiling a
   win gains less than 1 point, or nothing. The seed names no such limit for a loss other than 0.
7. Upset bonus: a winner rated below its opponent gets an extra full_bonus·(r_opp - r_own)/(R_MAX
   - R_MIN), the full bonus (250 by default, as in INVERSUS) at the largest possible gap and
   falling linearly to 0 as the two ratings meet. The ratings compared are both bots' Glicko-2
   ratings before the battle (INVERSUS stores the opponent's at the start of the match). The bonus
   is part of the step, so rules 5 and 6 bound it too. The seed's author would leave it out if
   starting over; ``full_bonus=0`` does that.

Rank Points use the bot's Glicko-2 value *after* the battle's update as their target.
"""

from __future__ import annotations

from numba.extending import register_jitable

from rumble.ratings.glicko2 import R_MAX, R_MIN, Z_997

START = 0.0  # seed 000: "Players start at 0 Rank Points"
RP_MAX = 10_000.0  # seed 000: the rating bounds remapped onto [0, 10000] to make points "chunky"
APPROACH = 0.5  # seed 000: "steps halfway between the current RP and the desired RP"
MIN_STEP = 1.0  # seed 000: every battle is seen to have some reward (or cost)
MAX_STEP = 500.0  # seed 000: tames a new player's early swings ("a pretty number")
UPSET_BONUS = 250.0  # seed 000: the extra points for beating an opponent at the largest possible gap


@register_jitable
def to_rank_points(rating: float) -> float:
    """A Glicko-2 rating mapped linearly from [R_MIN, R_MAX] onto [0, 10000], clamped (rule 2)."""
    points = (rating - R_MIN) / (R_MAX - R_MIN) * RP_MAX
    return min(max(points, 0.0), RP_MAX)


@register_jitable
def target(r: float, rd: float) -> float:
    """The Rank Points the bot is moving towards: its 99.7 % lower bound r - 3·RD (rules 1-2)."""
    return to_rank_points(r - Z_997 * rd)


@register_jitable
def ceiling(r: float, rd: float) -> float:
    """The most a win can lift RP to: the 99.7 % upper bound r + 3·RD, at most 10000 (rule 6)."""
    return to_rank_points(r + Z_997 * rd)


@register_jitable
def upset_bonus(r_own: float, r_opp: float, full_bonus: float = UPSET_BONUS) -> float:
    """The winner's extra points for beating a higher-rated opponent (rule 7)."""
    return full_bonus * max(r_opp - r_own, 0.0) / (R_MAX - R_MIN)


@register_jitable
def update(
    rp: float, r: float, rd: float, share: float, r_before: float, opp_r_before: float, full_bonus: float = UPSET_BONUS
) -> float:
    """A bot's Rank Points after one battle.

    ``r``, ``rd``: the bot's Glicko-2 value after this battle's update; ``share``: its share of the
    battle's total score (0..1); ``r_before``, ``opp_r_before``: both bots' Glicko-2 ratings before it.
    """
    half_step = APPROACH * (target(r, rd) - rp)
    if share > 0.5:
        gain = half_step + upset_bonus(r_before, opp_r_before, full_bonus)
        gain = min(max(gain, MIN_STEP), MAX_STEP)
        return max(rp, min(rp + gain, ceiling(r, rd)))
    if share < 0.5:
        loss = min(max(-half_step, MIN_STEP), MAX_STEP)
        return max(rp - loss, 0.0)
    return rp
