"""Statistical ties in a rankings table: the ranks each bot could hold given its APS interval.

A bot's APS is known to within its 95 % interval [APS − h, APS + h], h = 1.96·√Var, Var the variance
of its APS that the likelihood of superiority uses (superiority.aps_variance: the APS CI's
(CI / 1.96)², except that each single-battle pairing counts a whole battle's variance σ²/1 instead
of standing at the others' mean SE², so h ≥ CI). Taking the LOS's Var, not the CI, the ties and the
LOS cannot disagree about how uncertain a bot's score is. Its best rank is 1 + the number of bots
certainly above it (their interval lies wholly above its own), its worst rank the number of bots
not certainly below it (their interval reaches its own), itself included. When the two differ the
bot is statistically tied with the bots around it, and the table shows the range (e.g. 3–5)
instead of pretending to an order the battles do not support. A bot without an interval yet (no
pairing with two battles: Var None) could be anywhere: its interval is the whole 0..100. No peer
server marks this (peers.md section 6, item 6).
"""

from __future__ import annotations

import math
from bisect import bisect_left, bisect_right

from rumble.rankings.scores import Z95


def rank_ranges(aps: list[float | None], variance: list[float | None]) -> list[tuple[int, int]]:
    """(best, worst) possible rank of each bot, in the order given, from its APS and its APS's
    variance as the LOS has it (superiority.Standing.variance; None: unknown)."""
    lows, highs = [], []
    for a, v in zip(aps, variance):
        if a is None or v is None:
            lows.append(0.0)
            highs.append(100.0)
        else:
            half = Z95 * math.sqrt(v)
            lows.append(a - half)
            highs.append(a + half)
    sorted_lows, sorted_highs = sorted(lows), sorted(highs)
    n = len(lows)
    ranges = []
    for low, high in zip(lows, highs):
        above = n - bisect_right(sorted_lows, high)  # lower bound above my upper bound
        not_below = n - bisect_left(sorted_highs, low)  # upper bound reaching my lower bound
        ranges.append((above + 1, not_below))
    return ranges


def stability(pairings: list[int], unrated_since_change: int) -> tuple[str, str]:
    """The table's banner: (state, words). ``pairings``: each active bot's live pairings;
    ``unrated_since_change``: active bots not rated since the last retirement or restoration.

    complete: every bot has met every other; incomplete: some pairings are missing; unstable: the
    field changed and some bots' ratings still count it as it was (APS and the other scores are
    always current: a retirement takes effect at once).
    """
    n = len(pairings)
    missing = sum(n - 1 - p for p in pairings) // 2
    if missing > 0:
        lacking = sum(1 for p in pairings if p < n - 1)
        return (
            "incomplete",
            f"Pairings incomplete: {lacking} of {n} bots have not met everyone ({_count(missing, 'pairing')} missing).",
        )
    if unrated_since_change:
        return "unstable", (
            f"Ratings unstable: the field changed and {_count(unrated_since_change, 'bot')} "
            f"{'has' if unrated_since_change == 1 else 'have'} not battled since; "
            "their ratings catch up at their next battle."
        )
    return "complete", f"Pairings complete: all {n} bots have met each other."


def _count(n: int, noun: str) -> str:
    """``n`` and the noun, singular for one: "1 pairing", "3 pairings"."""
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"
