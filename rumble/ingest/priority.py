"""Which battles the server asks clients to fight next (the ``[a_v,b_v]`` answer lines).

Order of preference, after LiteRumble's 2026 scheme (peers.md section 1):

1. missing pairings: pairs of active participants that have never met, drawn at random: the pairs
   whose fixed pseudo-random keys follow a random key (rumble.store.missing_pairings.draw). Every
   pair is about equally likely (the batch is drawn from a window of several times its size, whose
   span of the key space varies little), so a bot comes up in proportion to how many pairings it lacks, as
   drawing the bot weighted by that number and then one of its unmet opponents would;
2. pairings with fewer than ``min_battles`` battles, fewest first (their CI is undefined or
   meaningless);
3. the pairings where one more battle shrinks the APS uncertainty most: the variance reduction
   Var/(n·(n+1)) of the pairing mean, times 10 when its 95 % interval straddles 50 (so near-ties
   get resolved), drawn at random from those scoring at least half the best.

Melee rumbles (peers.md section 1, the 2018 wiki thread on over-sampling): the client plays a
priority pair (a, b) as a battle of a, b and 8 random others and uploads the 17 pairs of a and b.
Every missing pairing involves the new bot, so rule 1 alone would put it in every priority battle
until it has met everyone: its pairs with the random others re-sample pairings it already has, and
its partner's 8 pairs with them are pairings of old bots measured, every time, in the new bot's
presence. So in a melee rumble a bot takes at most ``MELEE_SHARE`` of a batch's pairs
(``melee_cap``); the rest of the batch goes to other bots' pairings (rumble.ingest.apply).

A pairing's score depends on that pairing alone, so it is computed when the pairing changes and
kept in an index; the missing pairings are kept in a table of their own as bots enter, retire and
meet (rumble.store.missing_pairings). Choosing is then two short index scans, whatever the size of
the rumble and however many pairings are missing. Pure code: the store does the reading.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

import numpy as np

from rumble.rankings.scores import Z95, Pairing, pairing_ci, pairing_variance

FEW_BATTLES = 1_000_000.0  # tier 2 scores sit above any variance reduction (at most 2500·10/6)
STRADDLE_BOOST = 10.0  # LiteRumble's weight for a pairing whose interval contains 50
BAND = 0.5  # draw among pairings scoring at least this fraction of the best
MELEE_SHARE = 0.25  # in a melee rumble, the most of a priority batch one bot may take


def pairing_priority(pairing: Pairing, min_battles: int) -> float:
    """How much one more battle of this pairing is worth (higher first)."""
    n = pairing.battles
    if n < max(min_battles, 2):
        return FEW_BATTLES - n
    gain = pairing_variance(pairing) / (n * (n + 1))
    ci = pairing_ci(pairing)
    if ci is not None and abs(pairing.aps - 50.0) < ci:
        gain *= STRADDLE_BOOST
    return gain


def pairing_priorities(battles: np.ndarray, aps: np.ndarray, aps_m2: np.ndarray, min_battles: int) -> np.ndarray:
    """``pairing_priority`` of many played pairings at once (a rebuild's), with the same operations."""
    few = FEW_BATTLES - battles
    n = np.maximum(battles, 2)  # the rows with fewer battles take ``few``; this only keeps them finite
    variance = aps_m2 / n  # pairing_variance
    gain = variance / (n * (n + 1))
    ci = Z95 * np.sqrt(variance / (n - 1))  # pairing_ci
    gain = np.where(np.abs(aps - 50.0) < ci, gain * STRADDLE_BOOST, gain)
    return np.where(battles < max(min_battles, 2), few, gain)


def pick_weighted(items: Sequence[int], weights: Sequence[float], rng: random.Random) -> int:
    """One item drawn with probability proportional to its weight."""
    return rng.choices(items, weights=weights, k=1)[0]


def choose_pairs(
    candidates: Sequence[tuple[int, int, float]], k: int, rng: random.Random
) -> list[tuple[int, int, str]]:
    """Up to ``k`` pairs (a, b, reason) from candidates (a, b, priority), best first.

    Few-battle pairings go strictly by battle count (ties in random order); the rest are drawn
    at random from the band scoring at least ``BAND`` times the best.
    """
    few = [c for c in candidates if c[2] > FEW_BATTLES - 1_000]
    rest = [c for c in candidates if c[2] <= FEW_BATTLES - 1_000]
    rng.shuffle(few)
    few.sort(key=lambda c: -c[2])
    chosen = [(a, b, "few battles") for a, b, _ in few[:k]]
    if len(chosen) < k and rest:
        best = max(c[2] for c in rest)
        band = [c for c in rest if c[2] >= BAND * best]
        picked = rng.sample(band, min(k - len(chosen), len(band)))
        chosen += [(a, b, "uncertain") for a, b, _ in picked]
    return chosen


def melee_cap(batch: int) -> int:
    """How many of a melee batch's ``batch`` pairs one bot may be in (at least 1)."""
    return max(1, int(batch * MELEE_SHARE))


def within_cap(
    pairs: Sequence[tuple[int, int, str]], counts: dict[int, int], cap: int | None
) -> list[tuple[int, int, str]]:
    """``pairs`` in order, leaving out each pair one of whose bots is already in ``cap`` chosen
    pairs; ``counts`` (bot -> pairs chosen so far) is updated. No cap: all of them."""
    kept = []
    for a, b, reason in pairs:
        if cap is not None and (counts.get(a, 0) >= cap or counts.get(b, 0) >= cap):
            continue
        counts[a], counts[b] = counts.get(a, 0) + 1, counts.get(b, 0) + 1
        kept.append((a, b, reason))
    return kept
