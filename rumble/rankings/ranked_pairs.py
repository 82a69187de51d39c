"""Tideman's Ranked Pairs: lock the majorities from strongest to weakest, skipping any that closes a cycle.

Sources: T. N. Tideman, "Independence of clones as a criterion for voting rules", Social Choice and
Welfare 4 (1987) 185-206; Wikipedia "Ranked pairs" (the tally, sort and lock steps, and the
Tennessee example). The cycle check keeps a topological order of the locked graph up to date as
edges arrive: D. J. Pearce and P. H. J. Kelly, "A dynamic topological sort algorithm for directed
acyclic graphs", ACM Journal of Experimental Algorithmics 11 (2006), algorithm PK.

Votes from a pairwise matrix, as for Schulze: ``d[X, Y]`` is the number of voters who prefer X to Y
(for a rumble, X's pairing APS against Y). X has a majority over Y when d[X, Y] > d[Y, X].

Lock order: by strength, larger first (winning votes d[X, Y] by default, or ``strength="margin"``
/ ``"ratio"``, ``pairwise.link_strengths``), then by margin d[X, Y] − d[Y, X], larger first (of two
majorities with the same winning votes, the one with fewer votes against it goes first, Wikipedia's
sort step). Majorities equal in both are one *tier*, considered together, so that the result never
depends on the order the bots are given in: a tier's majorities that lie on a cycle of the locked
graph plus the whole tier are skipped together (none of them could be locked without choosing
among equals), the others are all locked. Those cannot close a cycle with each other or with what is
locked (a cycle of the locked edges plus them would run through the tier's graph, where none of them
lies on one). So a perfect Condorcet cycle A>B>C>A of equal majorities is a three-way tie, not A, B,
C by input order. (Tideman's 1987 rule breaks such ties by a tie-breaking ranking of the candidates
drawn at random, and Zavist and Tideman's 1989 refinement by a ranking built from the voters' own;
either picks one of the equals. Skipping the tier picks none: every bot the equal majorities could
put first shares the top rank.) ``lock_order`` lists the majorities with ties between tiers broken by
the winner's then the loser's index, for display only: the locked graph does not depend on it.
The locked edges form a ``networkx.DiGraph`` (``locked_graph``). Ranking: a bot's rank is 1 + the
number of bots with a locked path to it. That is a topological order of the locked graph, and two
bots of equal rank have no locked path between them. Every pairing played and no exact 50s gives
a strict order: each majority is then either locked or skipped because the reverse path exists.

Ties and missing pairings: an exact 50/50 pairing and a missing pairing are not majorities and are
never locked (no preference), so they leave the pair ordered only through other bots, if at all.
A bot without pairings has nothing above it and shares rank 1: leave such bots out first.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING

import numpy as np

from rumble.rankings.pairwise import Ranking, as_matrix, link_strengths, majorities

if TYPE_CHECKING:
    import networkx as nx


def rank(d: np.ndarray, strength: str = "winning_votes") -> Ranking:
    """Ranked Pairs ranks of the bots of ``d`` (no scores: the ranks come from the locked graph)."""
    graph, topological = _lock(as_matrix(d), strength)
    return Ranking(ranks=1 + _ancestor_counts(graph, topological))


def locked_graph(d: np.ndarray, strength: str = "winning_votes") -> nx.DiGraph:
    """The locked majorities as a DiGraph on the bot indices; an edge X→Y means X is ranked above Y."""
    return _lock(as_matrix(d), strength)[0]


def lock_order(d: np.ndarray, strength: str = "winning_votes") -> tuple[np.ndarray, np.ndarray]:
    """(winners, losers) of every majority, in the order they are considered for locking."""
    d = as_matrix(d)
    winners, losers = np.nonzero(majorities(d))
    strengths = link_strengths(d, strength)[winners, losers]
    margins = (d - d.T)[winners, losers]
    order = np.lexsort((losers, winners, -margins, -strengths))  # the last key sorts first
    return winners[order], losers[order]


def _lock(d: np.ndarray, strength: str) -> tuple[nx.DiGraph, list[int]]:
    """The locked graph and a topological order of it."""
    # Any order is a valid start for an empty graph; the majority-win count puts most bots near
    # their final place, so most majorities already point forward and cost one comparison.
    order = _DynamicOrder(np.argsort(-majorities(d).sum(axis=1), kind="stable").tolist())
    winners, losers = lock_order(d, strength)
    keys = _tier_keys(d, strength, winners, losers)
    locked: list[tuple[int, int]] = []
    start = 0
    while start < len(winners):
        stop = start + 1
        while stop < len(winners) and keys[stop] == keys[start]:
            stop += 1
        tier = list(zip(winners[start:stop].tolist(), losers[start:stop].tolist()))
        locked += order.lock(tier if len(tier) == 1 else order.acyclic_part(tier))
        start = stop
    import networkx as nx  # here, not at the top: the CLI lists the batch methods without paying for networkx

    graph = nx.DiGraph()
    graph.add_nodes_from(range(len(d)))
    graph.add_edges_from(locked)
    return graph, order.node_at


def _tier_keys(d: np.ndarray, strength: str, winners: np.ndarray, losers: np.ndarray) -> list[tuple[float, float]]:
    """(strength, margin) of each majority in lock order: equal keys are one tier."""
    strengths = link_strengths(d, strength)[winners, losers]
    margins = (d - d.T)[winners, losers]
    return list(zip(strengths.tolist(), margins.tolist()))


def _ancestor_counts(graph: nx.DiGraph, topological: list[int]) -> np.ndarray:
    """For each bot, how many bots have a locked path to it (Python ints as bitsets)."""
    bit = [1 << x for x in range(len(topological))]
    reached_by = [0] * len(topological)
    for v in topological:  # every predecessor comes earlier, so its set is complete
        bits = 0
        for u in graph.pred[v]:
            bits |= reached_by[u] | bit[u]
        reached_by[v] = bits
    return np.array([bits.bit_count() for bits in reached_by], dtype=int)


def _members(bits: int) -> Iterator[int]:
    """The bot indices in a bitset, lowest first."""
    while bits:
        low = bits & -bits
        yield low.bit_length() - 1
        bits ^= low


class _DynamicOrder:
    """A topological order of a growing DAG, kept up to date edge by edge (Pearce and Kelly, PK).

    ``pos[x]`` is x's place and ``node_at[i]`` the bot in place i; ``succ[x]`` and ``pred[x]`` are
    x's locked successors and predecessors as bitsets (Python ints, bit y set for bot y).
    Adding u→v when u is already before v cannot close a cycle: every locked edge points forward,
    so nothing after u reaches u. Otherwise only the bots placed between v and u can be on a
    cycle: a search forward from v inside that window finds u (a cycle: refuse) or the set F it
    reaches, a search backward from u finds the set B that reaches u, and B then F are put into
    the places they held, in their old relative order. Most refused majorities close a triangle
    v→w→u, which one AND of two bitsets finds before any search.
    """

    def __init__(self, initial: list[int]):
        n = len(initial)
        self.node_at = list(initial)
        self.pos = [0] * n
        for place, x in enumerate(initial):
            self.pos[x] = place
        self.bit = [1 << x for x in range(n)]
        self.succ = [0] * n
        self.pred = [0] * n

    def lock(self, majorities: Iterable[tuple[int, int]]) -> list[tuple[int, int]]:
        """Lock each u→v in turn unless it closes a cycle; return the locked ones, in order."""
        pos, succ, pred, bit = self.pos, self.succ, self.pred, self.bit  # locals: this loop is the hot path
        locked = []
        for u, v in majorities:
            if pos[u] > pos[v] and not self._reorder_for(u, v):
                continue
            succ[u] |= bit[v]
            pred[v] |= bit[u]
            locked.append((u, v))
        return locked

    def acyclic_part(self, tier: list[tuple[int, int]]) -> list[tuple[int, int]]:
        """The majorities of a tier that lie on no cycle of the locked graph plus the whole tier."""
        extra = [0] * len(self.succ)
        for u, v in tier:
            extra[u] |= self.bit[v]
        return [(u, v) for u, v in tier if not self._reaches(extra, v, u)]

    def _reaches(self, extra: list[int], start: int, goal: int) -> bool:
        """Whether ``goal`` is reachable from ``start`` along the locked edges and ``extra``."""
        seen = self.bit[start]
        stack = [start]
        while stack:
            x = stack.pop()
            new = (self.succ[x] | extra[x]) & ~seen
            if new & self.bit[goal]:
                return True
            seen |= new
            stack.extend(_members(new))
        return False

    def _reorder_for(self, u: int, v: int) -> bool:
        """Make room for u→v with v placed before u; False if v already reaches u."""
        if self.succ[v] & self.pred[u]:
            return False
        window = 0
        for place in range(self.pos[v], self.pos[u] + 1):
            window |= self.bit[self.node_at[place]]
        forward = self._search(self.succ, v, window)
        if forward & self.bit[u]:
            return False
        backward = self._search(self.pred, u, window)
        self._reorder(list(_members(backward)), list(_members(forward)))
        return True

    def _search(self, edges: list[int], start: int, window: int) -> int:
        """Bitset of the bots reachable from ``start`` along ``edges`` without leaving ``window``."""
        seen = self.bit[start]
        stack = [start]
        while stack:
            new = edges[stack.pop()] & window & ~seen
            seen |= new
            stack.extend(_members(new))
        return seen

    def _reorder(self, backward: list[int], forward: list[int]) -> None:
        """Put ``backward`` before ``forward`` in the places both sets held."""
        pos = self.pos
        moved = sorted(backward, key=pos.__getitem__) + sorted(forward, key=pos.__getitem__)
        for x, place in zip(moved, sorted(pos[x] for x in moved)):
            pos[x] = place
            self.node_at[place] = x
