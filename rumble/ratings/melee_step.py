"""One reassembled melee battle as one rating step of the 1v1 ratings, for every bot in it at once.

In a melee rumble the client uploads one battle as up to 45 pair results (protocol.md 7.5). Rating
each pair upload as its own rating period would give every bot about nine periods per battle (a
winner had over 4,000 Rank Points after its first battle, where seed 000 moves at most 500 a game).
So a melee rumble rates a battle once, when it is reassembled and closed (rumble/ingest/melee.py), and
each bot of the battle gets exactly one step of every rating, all computed from the values as they
stood before the battle:

- RoboRumble Elo: one all-pairings update (seed 004), Σ 3·(pairing APS − E) over the bot's live
  pairings, the pairings already holding this battle's pairs;
- Glicko and Glicko-2: one rating period whose games are the bot's pair results of this battle
  (that is what a rating period is for: Glickman's games within one period), one against each other
  bot seen in the battle with the score share s_i/(s_i + s_j) of the two whole-battle scores (0.5 if
  both are 0), each deviation grown for the time since its own last update, as in 1v1. Every pair
  carries both bots' whole-battle scores, so the result of a pair the client did not send (a
  prioritized battle sends 17 of 45) is known all the same, and every bot has its full set of games;
- Rank Points: one step (seed 000), at most 500, over the new Glicko-2 value; the outcome is the
  bot's mean score share over its pairs (above 0.5 a win, below a loss) and the upset bonus compares
  its Glicko-2 with the mean of its opponents' (seed 000's composite opponent);
- XonStat Elo: the mean of its pairwise changes (seed 002's team games, ``xonstat.update_melee``),
  the same figure the melee tables show;
- a method declared with a step of its own (rumble.ratings.columns): the mean of its pairwise
  changes against each other bot of the battle, as XonStat's.

Pure code: numpy and the rating modules' own formulas.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from rumble.ratings import elo, glicko, glicko2, rank_points, xonstat
from rumble.ratings.all_pairings import (
    ELO,
    GLICKO,
    GLICKO2,
    GLICKO2_RD,
    GLICKO2_VOLATILITY,
    GLICKO_RD,
    RANK_POINTS,
    RATED_AT,
    XONSTAT,
)
from rumble.ratings.columns import ROW, STEPPED


def _grown(table: np.ndarray, i: int, now: float) -> tuple[float, float]:
    """Bot i's Glicko RD and Glicko-2 RD grown for the time since its last update (never rated: as is)."""
    rated_at = table[RATED_AT, i]
    elapsed = 0.0 if math.isnan(rated_at) else max(now - rated_at, 0.0)
    return (
        glicko.decay(table[GLICKO_RD, i], glicko.periods(elapsed)),
        glicko2.inactivity(table[GLICKO2_RD, i], table[GLICKO2_VOLATILITY, i], glicko2.whole_days(elapsed)),
    )


def rate_battle(
    aps: np.ndarray,
    active: np.ndarray,
    table: np.ndarray,
    xonstat_battles: np.ndarray,
    n: int,
    positions: Sequence[int],
    scores: Sequence[int],
    now: float,
    tau: float = glicko2.TAU,
    upset_bonus: float = rank_points.UPSET_BONUS,
) -> None:
    """Rate one melee battle of the bots at ``positions`` (a field's arrays, rumble.ratings.online),
    with their whole-battle ``scores``, fought at ``now`` (s since 1970); writes every bot's new
    values into ``table`` and counts the battle in ``xonstat_battles``."""
    k = len(positions)
    if k < 2 or len(scores) != k:
        raise ValueError(f"a rated melee battle needs 2 or more bots with a score each, not {k} and {len(scores)}")
    before = table[:, :n].copy()
    grown = [_grown(before, p, now) for p in positions]
    shares = np.array([[xonstat.score_share(scores[i], scores[j]) for j in range(k)] for i in range(k)])
    new_xonstat = xonstat.update_melee(
        [before[XONSTAT, p] for p in positions], [int(xonstat_battles[p]) for p in positions], list(scores)
    )
    for i, p in enumerate(positions):
        others = [j for j in range(k) if j != i]
        opp = np.array([positions[j] for j in others])
        games = shares[i, others]
        live = active[:n] & ~np.isnan(aps[p, :n])
        elo_new = before[ELO, p] + elo.delta(before[ELO, p], before[ELO, :n][live], aps[p, :n][live])
        rd1, rd2 = grown[i]
        g1, rd1_new = glicko.update(before[GLICKO, p], rd1, before[GLICKO, opp], [grown[j][0] for j in others], games)
        g2 = glicko2.update(
            before[GLICKO2, p],
            rd2,
            before[GLICKO2_VOLATILITY, p],
            before[GLICKO2, opp],
            [grown[j][1] for j in others],
            games,
            tau,
        )
        rp = rank_points.update(
            before[RANK_POINTS, p],
            g2.r,
            g2.rd,
            float(np.mean(games)),
            before[GLICKO2, p],
            float(np.mean(before[GLICKO2, opp])),
            upset_bonus,
        )
        table[[ELO, GLICKO, GLICKO_RD, GLICKO2, GLICKO2_RD, GLICKO2_VOLATILITY, RANK_POINTS, XONSTAT, RATED_AT], p] = [
            elo_new,
            g1,
            rd1_new,
            g2.r,
            g2.rd,
            g2.sigma,
            rp,
            new_xonstat[i],
            now,
        ]
        xonstat_battles[p] += 1
    for rating in STEPPED:
        if rating.step is None:  # never: STEPPED holds the methods with a step
            continue
        rows = [ROW[value] for value in rating.values]
        for i, p in enumerate(positions):
            own = before[rows, p].tolist()
            changes = [
                np.subtract(rating.step(own, before[rows, positions[j]].tolist(), shares[i, j])[0], own)
                for j in range(k)
                if j != i
            ]
            table[rows, p] = np.add(own, np.mean(changes, axis=0))


def rate_field(field, bots: Sequence[int], scores: Sequence[int], now: float) -> None:
    """``rate_battle`` on a ``rumble.ratings.online.Field`` for the bots (ids, all already in it)."""
    rate_battle(
        field.aps,
        field.active,
        field.table,
        field.xonstat_battles,
        len(field.ids),
        [field.position[bot] for bot in bots],
        scores,
        now,
    )
