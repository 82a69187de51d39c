"""Uploader consistency: how far each uploader's battles fall from the other uploaders' consensus.

After fishtest's per-worker residuals (a worker whose results are implausible next to everyone
else's is dropped). Pure code over plain data: one ``Share`` per battle, the score share (0 to 100)
of the pairing's first bot (``a < b``) as one uploader reported it; or, what the server reads, the
sums those battles give per uploader and pairing (``from_sums``; every statistic below needs only
a pairing's battle count, sum and sum of squares per uploader). Each sum is the exact one,
correctly rounded, and the pairings are taken in name order, so that the figures depend only on
the battles, not on their order.

**Residuals.** One per pairing an uploader shares with others, not one per battle (an uploader's
battles on one pairing are all measured against the same consensus, so per-battle z would be
correlated). For uploader u with k battles of mean x̄ on pairing p, the *others* are every battle on
p by the other uploaders (less those left out of the consensus, see below): n_o battles with mean m_o and sum
of squares SS_o. Then

    r = x̄ − m_o,    z = r / sqrt(s_p² · (1/k + 1/n_o)),
    s_p² = max((K · c · spread(m) + SS_o) / (K + n_o − 1), SD_FLOOR²),

the battle-level variance of p: the others' own sum of squares shrunk towards a rumble-wide model
c · spread(m), taken at the mean m of all of p's battles (u's too, so that a consensus erring
towards 0 or 100 does not shrink it), spread(m) = m(100 − m)/2500 + SPREAD_FLOOR (a share varies
like a proportion: most at 50, least near 0 and 100), c pooled over every pairing, with
K = ``SHRINK`` pseudo-battles. Under "u reports as the others do", z has mean 0 and variance about 1.

**Two tests per uploader**, because a forger can err two ways, each calibrated against the other
uploaders' own residuals (every uploader's z against its others, the reference being the pool of
the *other* uploaders' z), so that a variance model that fits a real rumble only roughly neither
flags the honest nor hides the dishonest:

* dispersion (random shares: residuals centred on 0 but too wide): over u's n residuals,
  D = (Σ |z| − n μ) / sqrt(n v (1 + n/N_ref)), where μ and v are the mean and variance of |z| in
  the reference of N_ref residuals (the last factor: μ is itself estimated); about N(0, 1) for
  large n (central limit theorem), one-sided (too wide only);
* bias (a bot pushed up or down whenever it fights): for each bot b, u's residuals from b's side,
  T_b = Σ z / sqrt(n_b w_b), w_b the mean z² of the reference's residuals of b, shrunk towards
  that of all of them (``BOT_SHRINK`` pseudo-residuals); the largest |T_b|, two-sided, Bonferroni-corrected over
  the bots tested.

The uploader's p is the smaller of the two, doubled (Bonferroni over the two tests), then
Holm-corrected over the uploaders tested (Holm 1979, "A simple sequentially rejective multiple
test procedure", Scand. J. Statist. 6: 65–70). An uploader is flagged when that corrected p is
below ``ALPHA``.

**Settling** (``settle``). A forger must not drag the consensus the honest are measured against
(fishtest drops such workers the same way), so everyone is tested again after each move, one move
per round: the most significant flagged uploader (or the pool, below) still in the consensus
leaves it, one at a time (taken out together with the forger, the honest it dragged the consensus
away from would go too); when none is left, the most consistent one left out whose p against the
consensus as it now stands is ≥ ``ALPHA`` comes back (an honest uploader flagged while a forger
still dragged its consensus must not stay out once the forger is gone); until no move is left.
Every verdict is then its p against the final consensus, and that consensus leaves out exactly
the flagged uploaders (and the untested small ones): none is shown consistent while left out.

Termination: an uploader that came back is never left out again in the same run, so each comes
back at most once, and between two returns the rounds only add to those left out: for n uploaders
the run ends within (n + 2)² rounds (at most 6 in the simulations). The price: an uploader that
came back and is then flagged again stays in the consensus, flagged (``Settled.unsettled``, said
in its reason; so would, stranger still, one that came back, was then left out while too small to
test, and is testable and consistent again: it stays out). In the simulations (scripts/sim_uploaders.py) that happened only where no coherent
state exists at all (every subset of uploaders left out tried): an uploader flagged while in the
consensus and consistent while out, its corrected p just either side of ``ALPHA``.

**Error rates over the whole loop** (scripts/sim_uploaders.py; 24 bots; an uploader counts as
flagged when its final verdict is). ``ALPHA`` is the family-wise level of Holm's correction over one
rumble's uploaders, so it claims that at most 1 % of honest rumbles have any uploader flagged. In
1,000 simulated honest rumbles (four uploaders of 50 to 700 battles, three of 5 to 19, pooled) 22
had one flagged (2.2 %, 95 % upper bound 3.1 %), the first round alone giving the same 22: the loop
adds no false flags, but the test is anti-conservative there, about twice its nominal level (3.2 %
with battles drawn from the variance model itself), mostly through the bias test of units with few
battles per bot (the pool, uploaders of 50 battles). In the first case of scripts/sim_uploaders.py (four honest, one
biased, one random, 350 battles each) 0 of 20 had an honest uploader flagged; in the spread forgery
(below) 0 of 200 honest uploaders were flagged and the pool of forgers was in 100 of 100.

**Small uploaders.** Those with fewer than ``MIN_BATTLES`` battles on shared pairings are tested
together as one more uploader (the row ``POOL``): a forgery split over many small names is tested
as a whole. If even the pool is too small, they are left out of the consensus: an untested
uploader never forms the reference that judges the others.
"""

from __future__ import annotations

import math
from array import array
from bisect import bisect_left
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from statistics import NormalDist
from typing import Any

import numpy as np

from rumble.rankings.scores import EXACT_UNIT, exact

ALPHA = (
    0.01  # flag when the Holm-corrected p is below this: family-wise over a rumble's units (nominal; see the docstring)
)
SD_FLOOR = 1.0  # score-share points: a pairing whose other battles agree exactly still has some noise
SHRINK = 5.0  # pseudo-battles of the modelled variance added to a pairing's own (few battles, noisy variance)
SPREAD_FLOOR = 0.05  # a 0/100 pairing still varies: its variance is taken as at least 5 % of a 50/50 one's
MIN_BATTLES = 20  # an uploader with fewer battles on pairings others also played is not tested
BOT_SHRINK = 30.0  # pseudo-residuals of the overall mean z² added to a bot's own (its own is noisy)
MIN_REFERENCE = 10  # reference battles below which a normal z's moments stand in for the measured ones
TOP_BOTS = 3  # bots listed per uploader
P_FLOOR = 1e-300  # p-values are clamped here so that z stays finite
_NORMAL = NormalDist()


@dataclass(frozen=True)
class Share:
    """One battle: ``uploader`` reported ``share`` (0 to 100) for bot ``a`` against bot ``b`` (a < b)."""

    uploader: str
    a: str
    b: str
    share: float


@dataclass
class Verdict:
    """One uploader's figures (``p`` is Holm-corrected; ``p_raw`` before the correction)."""

    uploader: str
    battles: int
    pairings_shared: int = 0
    tested: bool = False
    z: float | None = None
    p: float | None = None
    p_raw: float | None = None
    rms_z: float | None = None
    p_dispersion: float | None = None
    bias_z: float | None = None
    p_bias: float | None = None
    flagged: bool = False
    reason: str = ""
    top_bots: list[dict] = field(default_factory=list)
    pooled: bool = False  # tested with the other small uploaders, in the row ``POOL``

    def as_dict(self) -> dict:
        """The fields the API and the pages show."""
        return {
            "uploader": self.uploader,
            "battles": self.battles,
            "pairings_shared": self.pairings_shared,
            "tested": self.tested,
            "z": self.z,
            "p": self.p,
            "p_raw": self.p_raw,
            "rms_z": self.rms_z,
            "p_dispersion": self.p_dispersion,
            "bias_z": self.bias_z,
            "p_bias": self.p_bias,
            "flagged": self.flagged,
            "reason": self.reason,
            "top_bots": self.top_bots,
            "pooled": self.pooled,
        }


def normal_upper(z: float) -> float:
    """P(Z > z) for a standard normal Z."""
    return 0.5 * math.erfc(z / math.sqrt(2.0))


def holm(p_values: list[float]) -> list[float]:
    """Holm's step-down adjusted p-values, in the order given: the i-th smallest of m is multiplied
    by m − i + 1, kept monotone, capped at 1."""
    m = len(p_values)
    order = sorted(range(m), key=lambda i: p_values[i])
    adjusted = [0.0] * m
    running = 0.0
    for step, i in enumerate(order):
        running = max(running, min(1.0, (m - step) * p_values[i]))
        adjusted[i] = running
    return adjusted


Sums = tuple[str, str, str, int, int, int]  # uploader, a, b, battles, Σ share and Σ share², exact integers


@dataclass(frozen=True, eq=False)
class Totals:
    """Per pairing and uploader: battles, Σ share and Σ share² (``from_sums``), as flat arrays (a few
    dozen bytes a row where dicts of tuples took hundreds). The pairings are in name order, each
    one's rows ``start[i]:start[i + 1]`` in uploader name order, so that every figure computed from
    them (sums over pairings and uploaders) is the same however they were read."""

    bots: list[str]  # every bot's name, sorted; ``a`` and ``b`` index it
    uploaders: list[str]  # every uploader's name, sorted; ``uploader`` indexes it
    a: np.ndarray  # per pairing (int32): its first bot
    b: np.ndarray  # per pairing (int32): its second bot
    start: np.ndarray  # per pairing, and one past the last (int64): where its rows start
    uploader: np.ndarray  # per row (int32)
    battles: np.ndarray  # per row (int64)
    share: np.ndarray  # per row (float64): Σ share
    square: np.ndarray  # per row (float64): Σ share²

    def pairing_of(self, rows: np.ndarray) -> np.ndarray:
        """The pairing of each of ``rows``."""
        return np.searchsorted(self.start, rows, side="right") - 1

    def left_out(self, excluded: Iterable[str]) -> np.ndarray:
        """A mask over ``uploaders``: those in ``excluded``."""
        mask = np.zeros(len(self.uploaders), dtype=bool)
        for u in excluded:
            at = bisect_left(self.uploaders, u)
            if at < len(self.uploaders) and self.uploaders[at] == u:
                mask[at] = True
        return mask

    def counts(self) -> dict[str, int]:
        """Battles per uploader."""
        found = np.zeros(len(self.uploaders), dtype=np.int64)
        np.add.at(found, self.uploader, self.battles)
        return dict(zip(self.uploaders, found.tolist()))


def totals(shares: Iterable[Share]) -> Totals:
    """Per pairing and uploader: battles, sum and sum of squares of the shares (``from_sums``)."""
    exact_sums: dict[tuple[str, str, str], list[int]] = {}
    for s in shares:
        t = exact_sums.setdefault((s.uploader, s.a, s.b), [0, 0, 0])
        t[0] += 1
        t[1] += exact(s.share)
        t[2] += exact(s.share * s.share)
    return from_sums(((u, a, b, n, x, q) for (u, a, b), (n, x, q) in exact_sums.items()), EXACT_UNIT, EXACT_UNIT)


def from_sums(rows: Iterable[Sums], share_unit: int, square_unit: int) -> Totals:
    """The totals from exact sums, one row per uploader and pairing in any order, in units of
    1/``share_unit`` and 1/``square_unit`` (rumble.store.uploader_sums), each the correctly rounded
    value of the exact sum: they depend only on the battles, not on the order they were added in."""
    names: dict[str, int] = {}
    uploaders: dict[str, int] = {}
    columns = array("i"), array("i"), array("i"), array("q"), array("d"), array("d")
    a_of, b_of, u_of, n_of, x_of, q_of = columns
    for u, a, b, n, x, q in rows:
        a_of.append(names.setdefault(a, len(names)))
        b_of.append(names.setdefault(b, len(names)))
        u_of.append(uploaders.setdefault(u, len(uploaders)))
        n_of.append(n)
        x_of.append(x / share_unit)
        q_of.append(q / square_unit)
    bots, bot_rank = _ranked(names)
    people, people_rank = _ranked(uploaders)
    a, b, u = bot_rank[np.asarray(a_of)], bot_rank[np.asarray(b_of)], people_rank[np.asarray(u_of)]
    del a_of, b_of, u_of
    order = np.lexsort((u, b, a))
    a, b, u = a[order], b[order], u[order]
    first = np.flatnonzero(np.r_[True, (a[1:] != a[:-1]) | (b[1:] != b[:-1])]) if len(order) else order
    return Totals(
        bots,
        people,
        a[first],
        b[first],
        np.r_[first, len(order)].astype(np.int64),
        u,
        np.asarray(n_of, dtype=np.int64)[order],
        np.asarray(x_of, dtype=np.float64)[order],
        np.asarray(q_of, dtype=np.float64)[order],
    )


def _ranked(ids: dict[str, int]) -> tuple[list[str], np.ndarray]:
    """The names of ``ids`` sorted, and each id's place among them (int32)."""
    ordered = sorted(ids)
    rank = np.empty(len(ordered), dtype=np.int32)
    rank[[ids[name] for name in ordered]] = np.arange(len(ordered), dtype=np.int32)
    return ordered, rank


def spread(m: Any) -> Any:
    """The shape of a share's battle variance at mean ``m`` (a float or an array): m(100 − m)/2500 as
    for a proportion (1 at 50, 0 at the ends), plus ``SPREAD_FLOOR`` so that a lopsided pairing is
    not taken as noiseless."""
    return m * (100.0 - m) / 2500.0 + SPREAD_FLOOR


def _in_turn(values: np.ndarray) -> float:
    """Σ ``values`` added one after the other from the first, as a loop adds them (a cumulative sum
    is sequential; numpy's ``sum`` adds pairwise, which rounds differently)."""
    return float(np.cumsum(values)[-1]) if len(values) else 0.0


def pooled_scale(by_pairing: Totals, excluded: frozenset[str]) -> float:
    """c in Var(share) ≈ c · spread(mean): Σ within-pairing sum of squares / Σ (n − 1) · spread(mean),
    over the battles of uploaders not ``excluded``; the floor's square if there are none."""
    n, s, q = summed(by_pairing, np.arange(len(by_pairing.a)), by_pairing.left_out(excluded))
    many = n > 1
    n, s, q = n[many], s[many], q[many]
    ss = _in_turn(np.maximum(q - s * s / n, 0.0))
    weight = _in_turn((n - 1) * spread(s / n))
    return max(ss / weight, SD_FLOOR**2) if weight else SD_FLOOR**2


@dataclass(frozen=True)
class Residual:
    """One uploader's battles on pairing (a, b): their count, their mean's distance from the others'
    mean in points (from a's side), and that distance standardised (z)."""

    a: str
    b: str
    battles: int
    residual: float
    z: float


def residuals(
    by_pairing: Totals, uploader: str, excluded: frozenset[str] = frozenset(), scale: float | None = None
) -> list[Residual]:
    """``uploader``'s pairings that the others (not in ``excluded``) also played, each with its
    residual and z (module docstring). ``scale``: c, pooled over the battles not ``excluded`` when None.

    One residual per pairing, not per battle: an uploader's battles on one pairing are all measured
    against the same consensus, so their z would be correlated and the sums below too wide."""
    c = pooled_scale(by_pairing, excluded) if scale is None else scale
    t = by_pairing
    own = np.flatnonzero(t.uploader == bisect_left(t.uploaders, uploader))
    if not len(own) or t.uploaders[t.uploader[own[0]]] != uploader:
        return []
    pairings = t.pairing_of(own)
    n, total, q = summed(t, pairings, t.left_out(excluded | {uploader}))
    shared = n >= 1
    own, pairings, n, total, q = own[shared], pairings[shared], n[shared], total[shared], q[shared]
    k, own_total = t.battles[own], t.share[own]
    mean = total / n
    ss = np.maximum(q - total * total / n, 0.0)
    # the model at the mean of every battle of the pairing: at the others' mean alone it would
    # shrink when that mean errs towards 0 or 100 and skew z against the stronger bot
    everyone = (total + own_total) / (n + k)
    variance = np.maximum((SHRINK * c * spread(everyone) + ss) / (SHRINK + n - 1), SD_FLOOR**2)
    r = own_total / k - mean
    z = r / np.sqrt(variance * (1.0 / k + 1.0 / n))
    bots = t.bots
    return [
        Residual(bots[a], bots[b], k, r, z)
        for a, b, k, r, z in zip(
            t.a[pairings].tolist(), t.b[pairings].tolist(), k.tolist(), r.tolist(), z.tolist(), strict=True
        )
    ]


def summed(by_pairing: Totals, pairings: np.ndarray, left_out: np.ndarray) -> tuple[np.ndarray, ...]:
    """Per pairing of ``pairings``: [n, Σx, Σx²] over its uploaders not ``left_out`` (a mask over
    ``by_pairing.uploaders``), each added in uploader order from 0.0 as a loop over them would."""
    t = by_pairing
    first, size = t.start[pairings], t.start[pairings + 1] - t.start[pairings]
    n, total, q = np.zeros(len(pairings)), np.zeros(len(pairings)), np.zeros(len(pairings))
    for j in range(int(size.max(initial=0))):  # each pairing's j-th uploader, in every pairing at once
        at = np.flatnonzero(size > j)
        rows = first[at] + j
        kept = ~left_out[t.uploader[rows]]
        at, rows = at[kept], rows[kept]
        n[at] += t.battles[rows]
        total[at] += t.share[rows]
        q[at] += t.square[rows]
    return n, total, q


Found = list[Residual]


@dataclass
class Reference:
    """Sums over the reference residuals: count, Σ |z|, Σ z², and per bot [count, Σ z²]."""

    n: float = 0.0
    z1: float = 0.0
    z2: float = 0.0
    bots: dict[str, list[float]] = field(default_factory=lambda: defaultdict(lambda: [0.0, 0.0]))

    def add(self, found: Found, sign: float = 1.0) -> None:
        """Add (or with ``sign`` −1 take away) one uploader's residuals."""
        for one in found:
            self.n += sign
            self.z1 += sign * abs(one.z)
            self.z2 += sign * one.z * one.z
            for bot in (one.a, one.b):
                self.bots[bot][0] += sign
                self.bots[bot][1] += sign * one.z * one.z

    def copy(self) -> Reference:
        """An independent copy."""
        return Reference(
            self.n, self.z1, self.z2, defaultdict(lambda: [0.0, 0.0], {b: list(v) for b, v in self.bots.items()})
        )

    def moments(self) -> tuple[float, float]:
        """(μ, v): mean and variance of |z|; a normal z's, sqrt(2/π) and 1 − 2/π, with fewer than
        ``MIN_REFERENCE`` residuals."""
        if self.n < MIN_REFERENCE:
            return math.sqrt(2.0 / math.pi), 1.0 - 2.0 / math.pi
        mu = self.z1 / self.n
        v = self.z2 / self.n - mu * mu
        if not v > 1e-6:  # the other uploaders agree exactly (a small or deterministic rumble): the normal's
            return math.sqrt(2.0 / math.pi), 1.0 - 2.0 / math.pi
        return mu, v

    def bot_variance(self, bot: str) -> float:
        """w_b: the mean z² of the reference's residuals of ``bot``, shrunk towards that of all of them
        (``BOT_SHRINK`` pseudo-residuals; 1 when the reference is too small)."""
        overall = self.z2 / self.n if self.n >= MIN_REFERENCE else 1.0
        if not overall > 1e-6:  # residuals all (nearly) zero: no scale to learn from them
            overall = 1.0
        n, z2 = self.bots.get(bot, (0.0, 0.0))
        return (max(z2, 0.0) + BOT_SHRINK * overall) / (max(n, 0.0) + BOT_SHRINK)


def bot_shifts(found: Found, reference: Reference) -> list[dict[str, Any]]:
    """Per bot, from that bot's side: battles, mean residual per battle in points, and
    T_b = Σ z / sqrt(m_b w_b) over its m_b pairings; largest |T_b| first."""
    sums: dict[str, list[float]] = defaultdict(lambda: [0, 0, 0.0, 0.0])  # pairings, battles, Σ k·r, Σ z
    for one in found:
        for bot, sign in ((one.a, 1.0), (one.b, -1.0)):
            sums[bot][0] += 1
            sums[bot][1] += one.battles
            sums[bot][2] += sign * one.residual * one.battles
            sums[bot][3] += sign * one.z
    rows: list[dict[str, Any]] = [
        {
            "bot": bot,
            "battles": int(k),
            "mean_residual": r / k,
            "t": z / math.sqrt(m * reference.bot_variance(bot)),
        }
        for bot, (m, k, r, z) in sums.items()
    ]
    rows.sort(key=lambda row: (-abs(row["t"]), row["bot"]))
    return rows


def uploader_tests(found: Found, reference: Reference) -> tuple[float, float, float, float, list[dict[str, Any]]]:
    """(rms z, dispersion p, largest |T_b|, bias p Bonferroni-corrected over the bots, per-bot rows)."""
    n = len(found)
    q = sum(one.z * one.z for one in found)
    mu, v = reference.moments()
    # μ is itself estimated, from reference.n residuals: its error widens the difference by n / reference.n
    spread_of_sum = math.sqrt(n * v * (1.0 + n / max(reference.n, MIN_REFERENCE)))
    p_dispersion = normal_upper((sum(abs(one.z) for one in found) - n * mu) / spread_of_sum)
    bots = bot_shifts(found, reference)
    worst = abs(bots[0]["t"])
    return math.sqrt(q / n), p_dispersion, worst, min(1.0, len(bots) * 2.0 * normal_upper(worst)), bots


POOL = "small uploaders, pooled"  # the verdict row of the uploaders tested together (``consistency``)


@dataclass
class Settled:
    """Where ``settle`` stopped: every verdict (as ``consistency`` returns them), the uploaders left
    out of the final consensus, the units re-admitted to it on the way (in order), the units whose
    place disagrees with their verdict (``unsettled``: a flagged unit kept in the consensus because
    it was re-admitted in this run, or, rarer, a consistent one kept out; module docstring) and the
    rounds computed."""

    verdicts: list[Verdict]
    excluded: frozenset[str]
    readmitted: list[str]
    unsettled: list[str]
    rounds: int


@dataclass
class Round:
    """One round of the test against the consensus of the uploaders not in ``excluded``."""

    excluded: frozenset[str]
    found: dict[str, Found]  # every uploader's residuals
    small: list[str]  # uploaders below the minimum, tested pooled if ``pooled``, else untested
    pooled: bool
    members: dict[str, list[str]]  # unit (an uploader or ``POOL``) -> its uploaders
    verdicts: dict[str, Verdict]  # unit -> its verdict, Holm-corrected over the units tested

    def untested_in(self) -> list[str]:
        """Small uploaders neither tested nor yet out of the consensus."""
        return [] if self.pooled else [u for u in self.small if u not in self.excluded]

    def out(self, unit: str) -> bool:
        """Whether any of ``unit``'s uploaders is out of the consensus."""
        return any(u in self.excluded for u in self.members[unit])

    def inside(self, unit: str) -> bool:
        """Whether any of ``unit``'s uploaders is in the consensus."""
        return any(u not in self.excluded for u in self.members[unit])


def one_round(
    by_pairing: Totals, counts: dict[str, int], excluded: frozenset[str], alpha: float, min_battles: int
) -> Round:
    """Every unit tested against the consensus and the reference of the uploaders not ``excluded``
    (and not left untested): a unit's own residuals are taken out of its reference."""
    scale = pooled_scale(by_pairing, excluded)
    found = {u: residuals(by_pairing, u, excluded, scale) for u in sorted(counts)}
    small = sorted(u for u, rows in found.items() if sum(r.battles for r in rows) < min_battles)
    pooled = len(small) > 1 and sum(r.battles for u in small for r in found[u]) >= min_battles
    members = {u: [u] for u in sorted(counts) if u not in small}
    if pooled:
        members[POOL] = small
    untested = set() if pooled else set(small)
    reference = Reference()
    for u in sorted(counts):
        if u not in excluded and u not in untested:
            reference.add(found[u])
    verdicts = {}
    for unit, uploaders in members.items():
        own = reference.copy()
        for u in uploaders:
            if u not in excluded:
                own.add(found[u], -1.0)
        rows = [r for u in uploaders for r in found[u]]
        verdicts[unit] = unit_verdict(unit, sum(counts[u] for u in uploaders), rows, own, False, min_battles)
    tested = [v for v in verdicts.values() if v.p_raw is not None]
    for v, p in zip(tested, holm([v.p_raw for v in tested if v.p_raw is not None])):
        v.p, v.flagged = p, p < alpha
    return Round(excluded, found, small, pooled, members, verdicts)


def _raw(v: Verdict) -> float:
    """The p before Holm's correction, 1 when untested."""
    return v.p_raw if v.p_raw is not None else 1.0


def settle(shares: list[Share], alpha: float = ALPHA, min_battles: int = MIN_BATTLES) -> Settled:
    """``settle_totals`` over the totals of ``shares``."""
    return settle_totals(totals(shares), alpha, min_battles)


def settle_totals(by_pairing: Totals, alpha: float = ALPHA, min_battles: int = MIN_BATTLES) -> Settled:
    """The test run to its end (module docstring, "Settling"): one move per round, until none is left.

    1. small uploaders left untested (their pool too small) leave the consensus;
    2. else the most significant flagged unit still in the consensus leaves it, unless it was
       re-admitted in this run (it then stays in: this bounds the run);
    3. else the most consistent unit out of it (largest p) whose p is ≥ ``alpha`` comes back.

    When no move is left, every verdict is its p against that final consensus, every unit out of it
    is flagged (or untested) and every unit in it is not, unless a unit re-admitted was flagged
    again (``unsettled``, said in its reason)."""
    counts = by_pairing.counts()
    excluded: frozenset[str] = frozenset()
    readmitted: list[str] = []
    rounds = 0
    while True:
        state = one_round(by_pairing, counts, excluded, alpha, min_battles)
        rounds += 1
        untested = state.untested_in()
        if untested:  # an untested uploader never counts in the consensus
            excluded = excluded | frozenset(untested)
            continue
        # The most significant flagged unit leaves the consensus, then everyone is tested again:
        # flagged together, a forger and the honest it dragged the consensus away from would both go.
        leaving = [
            v for unit, v in state.verdicts.items() if v.flagged and state.inside(unit) and unit not in readmitted
        ]
        if leaving:
            worst = min(leaving, key=lambda v: (_raw(v), v.uploader))
            excluded = excluded | frozenset(state.members[worst.uploader])
            continue
        # None left to flag: the most consistent unit left out that is consistent with this
        # consensus comes back (an honest one left out early, when a forger had dragged it).
        back = [
            v
            for unit, v in state.verdicts.items()
            if v.tested and not v.flagged and state.out(unit) and unit not in readmitted
        ]
        if not back:
            break
        best = max(back, key=lambda v: (_raw(v), v.uploader))
        readmitted.append(best.uploader)
        excluded = excluded - frozenset(state.members[best.uploader])
    unsettled = sorted(
        unit
        for unit, v in state.verdicts.items()
        if (v.flagged and state.inside(unit)) or (v.tested and not v.flagged and state.out(unit))
    )
    return Settled(_rows(state, counts, alpha, min_battles, unsettled), excluded, readmitted, unsettled, rounds)


def consistency(shares: list[Share], alpha: float = ALPHA, min_battles: int = MIN_BATTLES) -> list[Verdict]:
    """Every uploader's verdict, flagged ones first, then by corrected p (module docstring).

    Uploaders with fewer than ``min_battles`` battles on shared pairings are tested together, as
    one more uploader (the row ``POOL``; each of them says so): a forgery split over many small
    names is still tested. Uploaders left untested (a pool too small) never count in the consensus
    the others are measured against: they can neither move it nor frame the honest. Each p is
    computed against the final consensus, which leaves out exactly the flagged (``settle``)."""
    return settle(shares, alpha, min_battles).verdicts


def consistency_of(by_pairing: Totals, alpha: float = ALPHA, min_battles: int = MIN_BATTLES) -> list[Verdict]:
    """``consistency`` over totals (``totals`` or ``from_sums``): the same verdicts as over the battles."""
    return settle_totals(by_pairing, alpha, min_battles).verdicts


def _rows(state: Round, counts: dict[str, int], alpha: float, min_battles: int, unsettled: list[str]) -> list[Verdict]:
    """The final round's verdicts with their reasons, and a row per small uploader; sorted."""
    verdicts = list(state.verdicts.values())
    for v in verdicts:
        v.reason = _reason(v, alpha, min_battles)
        if v.uploader in unsettled:
            v.reason = (
                "unsettled: consistent while left out of the consensus, so re-admitted; flagged again with it "
                "in, and kept in (once re-admitted, never left out again); " + v.reason
                if v.flagged
                else "unsettled: re-admitted once, then left out while untested, and not re-admitted twice; " + v.reason
            )
    small = state.small
    pool_verdict = state.verdicts.get(POOL)
    if pool_verdict is not None:
        pool_verdict.reason = (
            f"{len(small)} uploaders with fewer than {min_battles} battles each, tested together: "
            + pool_verdict.reason
        )
    for u in small:  # each small uploader's own row says how it was tested
        v = Verdict(u, counts[u], pairings_shared=len(state.found[u]), pooled=pool_verdict is not None)
        v.reason = (
            f"tested pooled with the {len(small) - 1} other uploaders of fewer than {min_battles} battles "
            f"(the row '{POOL}'): " + ("the pool is flagged" if pool_verdict.flagged else "the pool is consistent")
            if pool_verdict is not None
            else f"not tested: fewer than {min_battles} battles on pairings other uploaders also played"
        )
        verdicts.append(v)
    verdicts.sort(key=lambda v: (not v.flagged, v.p if v.p is not None else 2.0, v.uploader))
    return verdicts


def unit_verdict(uploader: str, battles: int, found: Found, pool: Reference, pooled: bool, min_battles: int) -> Verdict:
    """One uploader's figures; its reference is ``pool`` less its own residuals if they are in it."""
    verdict = Verdict(uploader, battles, pairings_shared=len(found))
    if sum(one.battles for one in found) < min_battles:
        return verdict
    reference = pool.copy()
    if pooled:
        reference.add(found, -1.0)
    rms, p_dispersion, worst, p_bias, bots = uploader_tests(found, reference)
    verdict.tested = True
    verdict.rms_z, verdict.p_dispersion, verdict.bias_z, verdict.p_bias = rms, p_dispersion, worst, p_bias
    verdict.p_raw = min(1.0, 2.0 * min(p_dispersion, p_bias))
    # the normal deviate whose upper tail is p_raw: "how many sigmas" (0 for p_raw ≥ 1/2)
    verdict.z = max(0.0, -_NORMAL.inv_cdf(min(max(verdict.p_raw, P_FLOOR), 0.5)))
    verdict.top_bots = [{k: r[k] for k in ("bot", "battles", "mean_residual", "t")} for r in bots[:TOP_BOTS]]
    return verdict


def _p_text(p: float | None) -> str:
    """A p-value for reading: three significant digits, or "< 1e-300" where it underflows."""
    return "< 1e-300" if p is not None and p < P_FLOOR else f"= {p:.3g}"


def _reason(v: Verdict, alpha: float, min_battles: int) -> str:
    """Plain words for a verdict."""
    if not v.tested:
        return f"not tested: fewer than {min_battles} battles on pairings other uploaders also played"
    if not v.flagged:
        return f"consistent with the other uploaders (corrected p {_p_text(v.p)} ≥ {alpha})"
    if (v.p_dispersion or 0.0) <= (v.p_bias or 0.0):
        return (
            f"flagged: its battles scatter {v.rms_z:.1f} times as widely as the other uploaders' "
            f"(dispersion p {_p_text(v.p_dispersion)}, corrected p {_p_text(v.p)} < {alpha})"
        )
    top = v.top_bots[0]
    return (
        f"flagged: {top['bot']} scores {top['mean_residual']:+.1f} points against the other uploaders' "
        f"consensus over {top['battles']} battles (bias p {_p_text(v.p_bias)}, corrected p {_p_text(v.p)} < {alpha})"
    )
