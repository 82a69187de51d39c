"""What a rollback of one uploader would give: the APS table with and without its battles.

Pure code over the battles' percentages per uploader and pairing: APS is each active bot's mean,
over its active opponents, of the pairing's mean battle percentage (the rumble's own APS;
/ScoreExplanation). The server reads the sums per uploader and pairing
(rumble.store.uploader_sums.pairing_sums), not the battles: each pairing's mean is its exact sum
divided by its battles, correctly rounded, so the table depends only on which battles count.
Computed in memory; nothing changes.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

from rumble.rankings.scores import EXACT_UNIT, exact

Battle = tuple[str, str, str, float, float]  # uploader, a, b, a's percentage, b's percentage
# uploader, a, b, battles, Σ a's percentage, Σ b's percentage (exact integers in some unit)
PairSums = tuple[str, str, str, int, int, int]
Pairs = dict[tuple[str, str], dict[str, tuple[int, int, int]]]  # pairing -> uploader -> battles, Σa, Σb


def sums_of(battles: Iterable[Battle]) -> list[PairSums]:
    """The battles' sums per uploader and pairing, exact in units of 2^-1074 (``EXACT_UNIT``)."""
    found: dict[tuple[str, str, str], list[int]] = {}
    for uploader, a, b, pa, pb in battles:
        t = found.setdefault((uploader, a, b), [0, 0, 0])
        t[0] += 1
        t[1] += exact(pa)
        t[2] += exact(pb)
    return [(u, a, b, n, sa, sb) for (u, a, b), (n, sa, sb) in found.items()]


def _pairs(sums: Iterable[PairSums]) -> Pairs:
    found: Pairs = {}
    for u, a, b, n, sa, sb in sums:
        found.setdefault((a, b), {})[u] = (n, sa, sb)
    return found


def aps_table(pairs: Pairs, unit: int, active: set[str], without: str | None = None) -> dict[str, float]:
    """Active bot -> APS over its active opponents, leaving out ``without``'s battles."""
    per_bot: dict[str, list[float]] = defaultdict(lambda: [0, 0.0])
    for a, b in sorted(pairs):  # name order: the sums below do not depend on the order the rows came in
        if a not in active or b not in active:
            continue
        n = sa = sb = 0
        for uploader, (k, x, y) in pairs[(a, b)].items():
            if uploader != without:
                n, sa, sb = n + k, sa + x, sb + y
        if not n:
            continue
        per_bot[a][0] += 1
        per_bot[a][1] += sa / (n * unit)
        per_bot[b][0] += 1
        per_bot[b][1] += sb / (n * unit)
    return {bot: total / k for bot, (k, total) in sorted(per_bot.items())}


def ranks(aps: dict[str, float]) -> dict[str, int]:
    """1-based rank by APS, ties broken by name (as the daily snapshot ranks)."""
    return {name: i + 1 for i, name in enumerate(sorted(aps, key=lambda n: (-aps[n], n)))}


def preview(battles: list[Battle], active: set[str], uploader: str) -> dict:
    """``preview_of`` over the battles themselves."""
    return preview_of(sums_of(battles), EXACT_UNIT, active, uploader)


def preview_of(sums: Iterable[PairSums], unit: int, active: set[str], uploader: str) -> dict:
    """The table now and without ``uploader``, from the sums per uploader and pairing (exact, in
    units of 1/``unit``): rows in the new order with rank and APS before and after, the battles it
    would remove and the pairings left with no battle."""
    pairs = _pairs(sums)
    now, after = aps_table(pairs, unit, active), aps_table(pairs, unit, active, uploader)
    rank_now, rank_after = ranks(now), ranks(after)
    rows = [
        {
            "name": name,
            "rank": rank_after[name],
            "aps": after[name],
            "rank_now": rank_now.get(name),
            "aps_now": now.get(name),
            "rank_change": rank_now[name] - rank_after[name] if name in rank_now else None,
            "aps_change": after[name] - now[name] if name in now else None,
        }
        for name in sorted(after, key=rank_after.__getitem__)
    ]
    live = [(pair, per) for pair, per in pairs.items() if pair[0] in active and pair[1] in active]
    return {
        "uploader": uploader,
        "battles": sum(per[uploader][0] for per in pairs.values() if uploader in per),
        "pairings_lost": sum(1 for _, per in live if set(per) == {uploader}),
        "bots_dropped": sorted(set(now) - set(after)),
        "rows": rows,
    }
