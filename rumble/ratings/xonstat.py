"""XonStat Elo: a per-battle Elo with a falling K (seed 002, the XonStat blog post of July 2012).

- Expected score: E_A = 1/(1 + 10^((r_B - r_A)/400)), chess Elo's base 10 and scale 400. (The
  blog writes it as 10^(r_A/400) / (10^(r_A/400) + 10^(r_B/400)), the same number.)
- K starts at 200 and falls linearly to 40 over a bot's first 32 battles in the rumble:
  K = 200 - 5·n, n being the battles the bot had *before* this one (as XonStat's ``elo.py``
  counts games), so the 1st battle has K = 200, the 2nd 195, the 32nd 45, and the 33rd and every
  later one 40.
- The seed scales K by the fraction of the match played (the blog: 800 of 1000 seconds gives 80 %
  of K). ``update`` takes that fraction, but the server passes none: every battle it accepts has
  the rumble's full rounds (rumble.protocol.upload.check_settings), so the fraction is always 1 and
  K is never scaled.
- The outcome S_A is the battle's score share s_A/(s_A + s_B), 0.5 when neither scored, where the
  seed's match outcome is 1 for a win and 0 for a loss: a deliberate difference (a robot battle's
  score says by how much; 51:49 is nearly a draw). Two settled bots of equal rating, one winning
  60:40, move by 40·(0.6 - 0.5) = 4 points here, by 40·(1 - 0.5) = 20 under the seed's rule.
- r_A' = r_A + K_A·(S_A - E_A), and the same for B with S_B = 1 - S_A.

The blog's text says "a K value of 20" for experienced players but computes with 40; 40 is what
its schedule gives after 32 games, and what reproduces its ±14.40 and ±25.60.

XonStat's code also clamps the rating gap, floors ratings at 100 and never lets an expected
winner lose points on a win (peers.md section 4); the seed describes none of that, so neither
does this module. Nor does the seed give a starting rating (XonStat's code starts at 100): bots
start at 1500, the centre of the base-10/400 scale that Glicko shares.
"""

from __future__ import annotations

from numba.extending import register_jitable

BASE, SCALE = 10.0, 400.0  # seed 002: chess Elo's curve
START = 1500.0  # not in the seed: the centre of the 10/400 scale, as in Glicko
K_START, K_END = 200.0, 40.0  # seed 002: "a K value of 200 ... decreases linearly down to 40"
K_BATTLES = 32  # seed 002: "over the course of 32 games"


@register_jitable
def expected_score(r_a: float, r_b: float) -> float:
    """E_A: A's expected score against B, 1/(1 + 10^((r_B - r_A)/400))."""
    return 1.0 / (1.0 + BASE ** ((r_b - r_a) / SCALE))


@register_jitable
def k_factor(battles_before: int) -> float:
    """K for a bot that has played ``battles_before`` battles in the rumble: 200 down to 40 by the 33rd."""
    if battles_before < 0:
        raise ValueError("battle count is negative")
    done = min(battles_before, K_BATTLES)
    return K_START - (K_START - K_END) * done / K_BATTLES


def score_share(score: int, other: int) -> float:
    """A side's share of the battle's total score, 0.5 when neither scored (the outcome S)."""
    total = score + other
    return 0.5 if total == 0 else score / total


@register_jitable
def update(r_a: float, r_b: float, n_a: int, n_b: int, share_a: float, fraction: float = 1.0) -> tuple[float, float]:
    """Both bots' ratings after one battle.

    ``n_a``, ``n_b``: the battles each had in the rumble before this one; ``share_a``: A's score
    share; ``fraction``: rounds played over the rumble's rounds (0..1).
    """
    if not 0.0 <= fraction <= 1.0:
        raise ValueError("fraction of the battle played must be within 0..1")
    new_a = r_a + k_factor(n_a) * fraction * (share_a - expected_score(r_a, r_b))
    new_b = r_b + k_factor(n_b) * fraction * ((1.0 - share_a) - expected_score(r_b, r_a))
    return new_a, new_b


def update_melee(ratings: list[float], battles_before: list[int], scores: list[int]) -> list[float]:
    """Every bot's rating after one melee battle: the mean of its pairwise changes (seed 002's
    team games: "running the above calculations between each winner and loser and averaging").

    Each pair of the battle is a XonStat duel of the two bots' battle scores (S = score share),
    computed from the ratings before the battle; a bot's change is the mean over its n - 1 pairs,
    each with its own K (``battles_before``: the bot's rated melee battles before this one).
    """
    n = len(ratings)
    if n < 2 or len(battles_before) != n or len(scores) != n:
        raise ValueError("a melee battle needs 2 or more bots, each with a rating, a battle count and a score")
    result = []
    for i in range(n):
        k = k_factor(battles_before[i])
        change = sum(
            k * (score_share(scores[i], scores[j]) - expected_score(ratings[i], ratings[j])) for j in range(n) if j != i
        )
        result.append(ratings[i] + change / (n - 1))
    return result
