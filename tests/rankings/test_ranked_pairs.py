"""Tideman's Ranked Pairs on Wikipedia's Tennessee example, its tie rule, and its fast cycle check."""

from __future__ import annotations

import itertools

import networkx as nx
import numpy as np
import pytest

from rumble.rankings import ranked_pairs

NAN = np.nan
CITIES = ["Memphis", "Nashville", "Chattanooga", "Knoxville"]


def tennessee() -> np.ndarray:
    """Wikipedia, "Ranked pairs", Example: 42 % M>N>C>K, 26 % N>C>K>M, 15 % C>K>N>M, 17 % K>C>N>M.

    Tally (percent preferring row over column): M 42 over each; N over C and K: 42 + 26 = 68;
    C over K: 42 + 26 + 15 = 83; everyone else over M: 58.
    """
    return np.array([[NAN, 42, 42, 42], [58, NAN, 68, 68], [58, 32, NAN, 83], [58, 32, 17, NAN]])


def test_tennessee_ranking_is_nashville_chattanooga_knoxville_memphis():
    ranks = ranked_pairs.rank(tennessee()).ranks
    assert dict(zip(CITIES, ranks.tolist())) == {"Nashville": 1, "Chattanooga": 2, "Knoxville": 3, "Memphis": 4}


def test_tennessee_locks_every_majority_in_wikipedias_order():
    """C>K 83 first; N>C and N>K tie at 68 (and at margin 36), so the loser's index decides; then the
    three 58s over Memphis by winner's index. None closes a cycle, so all six are locked."""
    winners, losers = ranked_pairs.lock_order(tennessee())
    assert list(zip(winners.tolist(), losers.tolist())) == [(2, 3), (1, 2), (1, 3), (1, 0), (2, 0), (3, 0)]
    graph = ranked_pairs.locked_graph(tennessee())
    assert isinstance(graph, nx.DiGraph)
    assert sorted(graph.edges) == [(1, 0), (1, 2), (1, 3), (2, 0), (2, 3), (3, 0)]


def test_unbalanced_cycle_skips_its_weakest_majority():
    """R→S 70 and S→P 60 are locked; P→R 55 would close the cycle: R > S > P."""
    d = np.array([[NAN, 45, 70], [55, NAN, 40], [30, 60, NAN]])  # rock, paper, scissors
    assert ranked_pairs.rank(d).ranks.tolist() == [1, 3, 2]
    assert sorted(ranked_pairs.locked_graph(d).edges) == [(0, 2), (2, 1)]


def condorcet_paradox() -> np.ndarray:
    """Condorcet's paradox as Wikipedia ("Condorcet paradox") gives it: three voters A>B>C, B>C>A,
    C>A>B. Tally (voters preferring row over column): A over B 2 (voters 1, 3), B over C 2 (1, 2),
    C over A 2 (2, 3), each against 1: the perfect cycle A>B>C>A with equal majorities."""
    return np.array([[NAN, 2, 1], [1, NAN, 2], [2, 1, NAN]])


@pytest.mark.parametrize("order", list(itertools.permutations(range(3))))
def test_condorcet_paradox_is_a_three_way_tie_in_any_input_order(order):
    """The three 2:1 majorities form one tier and all lie on its cycle, so none is locked: the three
    candidates share rank 1, whatever order they are given in (the old index rule ranked them
    by position: 1, 2, 3)."""
    d = condorcet_paradox()[np.ix_(order, order)]
    assert ranked_pairs.rank(d).ranks.tolist() == [1, 1, 1]
    assert ranked_pairs.locked_graph(d).number_of_edges() == 0


def test_a_tied_cycle_above_a_beaten_candidate_is_skipped_and_the_rest_locked():
    """Condorcet's three voters plus D, whom all three rank last: A, B, C each beat D 3:0 (locked
    first), then the 2:1 cycle is skipped as one tier: A, B, C share rank 1 and D is 4th."""
    d = np.full((4, 4), NAN)
    d[:3, :3] = condorcet_paradox()
    d[:3, 3], d[3, :3] = 3, 0
    for order in itertools.permutations(range(4)):
        ranks = ranked_pairs.rank(d[np.ix_(order, order)]).ranks.tolist()
        assert [ranks[order.index(x)] for x in range(4)] == [1, 1, 1, 4]


def test_a_tier_member_off_the_cycle_is_still_locked():
    """A>B, B>C, C>A and A>D all 60:40 (one tier); D-B and D-C exact 50s. The cycle's three are
    skipped, A→D lies on no cycle and is locked: A, B, C first, D 2nd (A alone above it)."""
    d = np.array([[NAN, 60, 40, 60], [40, NAN, 60, 50], [60, 40, NAN, 50], [40, 50, 50, NAN]])
    assert sorted(ranked_pairs.locked_graph(d).edges) == [(0, 3)]
    assert ranked_pairs.rank(d).ranks.tolist() == [1, 1, 1, 2]


def test_equal_winning_votes_go_by_margin_first():
    """C→A 50:20 is locked first. A→B 40:30 and B→C 40:10 tie on winning votes; B→C has the larger
    margin (30 against 10), so it is locked next, and A→B would close B→C→A→B: B > C > A. (Taking
    them by index instead would lock A→B and give C > A > B.)"""
    d = np.array([[NAN, 40, 20], [30, NAN, 40], [50, 10, NAN]])
    assert ranked_pairs.rank(d).ranks.tolist() == [3, 1, 2]


def test_exact_ties_are_never_locked():
    """A beats B and C; B-C is an exact 50: B and C stay unordered and share rank 2."""
    d = np.array([[NAN, 60, 70], [40, NAN, 50], [30, 50, NAN]])
    assert ranked_pairs.rank(d).ranks.tolist() == [1, 2, 2]
    assert sorted(ranked_pairs.locked_graph(d).edges) == [(0, 1), (0, 2)]


def test_all_exact_ties_leave_everyone_first():
    assert ranked_pairs.rank(np.full((3, 3), 50.0)).ranks.tolist() == [1, 1, 1]


def test_a_missing_pairing_is_not_a_majority():
    """A beats B, B beats C, A-C never met: A > B > C through B."""
    d = np.array([[NAN, 60, NAN], [40, NAN, 70], [NAN, 30, NAN]])
    assert ranked_pairs.rank(d).ranks.tolist() == [1, 2, 3]
    assert sorted(ranked_pairs.locked_graph(d).edges) == [(0, 1), (1, 2)]


def _naive_locked_edges(d: np.ndarray) -> set[tuple[int, int]]:
    """The documented rule written with networkx: majorities grouped into tiers of equal winning
    votes and margin, strongest first; a tier's majority is locked unless it lies on a cycle of
    the locked graph plus the whole tier (networkx.has_path back from its loser)."""
    graph = nx.DiGraph()
    graph.add_nodes_from(range(len(d)))
    tiers: dict[tuple[float, float], list[tuple[int, int]]] = {}
    for u in range(len(d)):
        for v in range(len(d)):
            if d[u, v] > d[v, u]:  # False for NaN
                tiers.setdefault((float(d[u, v]), float(d[u, v] - d[v, u])), []).append((u, v))
    for key in sorted(tiers, reverse=True):
        with_tier = graph.copy()
        with_tier.add_edges_from(tiers[key])
        graph.add_edges_from([(u, v) for u, v in tiers[key] if not nx.has_path(with_tier, v, u)])
    return set(graph.edges)


@pytest.mark.parametrize("seed", range(40))
def test_fast_cycle_check_locks_what_has_path_locks(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 30))
    strength = rng.normal(size=n)
    d = 100 / (1 + np.exp(strength[None, :] - strength[:, None])) + rng.normal(0, 25, (n, n))
    d = np.round(np.clip(d, 0, 100) / 10) * 10  # coarse: equal strengths, exact ties, cycles
    d[rng.uniform(size=(n, n)) < 0.1] = NAN
    np.fill_diagonal(d, NAN)
    assert set(ranked_pairs.locked_graph(d).edges) == _naive_locked_edges(d)
    order = rng.permutation(n)  # and the ranks do not depend on the order the bots are given in
    assert ranked_pairs.rank(d[np.ix_(order, order)]).ranks.tolist() == ranked_pairs.rank(d).ranks[order].tolist()


@pytest.mark.parametrize("seed", range(10))
def test_ranks_follow_the_locked_graph(seed):
    """Whenever X has a locked path to Y, X's rank is better; equal ranks are never connected."""
    rng = np.random.default_rng(seed)
    d = np.round(rng.uniform(0, 100, (15, 15)) / 20) * 20
    np.fill_diagonal(d, NAN)
    graph = ranked_pairs.locked_graph(d)
    ranks = ranked_pairs.rank(d).ranks
    for x in range(15):
        for y in nx.descendants(graph, x):
            assert ranks[x] < ranks[y]
        assert ranks[x] == 1 + len(nx.ancestors(graph, x))
