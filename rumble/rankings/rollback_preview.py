"""What a rollback of one uploader would give: the APS table with and without its battles.

Pure code over the log's percentages (rumble.store.uploader_battles.battle_shares): APS is each
active bot's mean, over its active opponents, of the pairing's mean battle percentage (the
rumble's own APS; /ScoreExplanation). Computed in memory; nothing changes.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

Battle = tuple[str, str, str, float, float]  # uploader, a, b, a's percentage, b's percentage


def aps_table(battles: Iterable[Battle], active: set[str], without: str | None = None) -> dict[str, float]:
    """Active bot -> APS over its active opponents, leaving out ``without``'s battles."""
    sums: dict[tuple[str, str], list[float]] = defaultdict(lambda: [0, 0.0, 0.0])
    for uploader, a, b, pa, pb in battles:
        if uploader == without or a not in active or b not in active:
            continue
        t = sums[(a, b)]
        t[0] += 1
        t[1] += pa
        t[2] += pb
    per_bot: dict[str, list[float]] = defaultdict(lambda: [0, 0.0])
    for (a, b), (n, sa, sb) in sums.items():
        per_bot[a][0] += 1
        per_bot[a][1] += sa / n
        per_bot[b][0] += 1
        per_bot[b][1] += sb / n
    return {bot: total / k for bot, (k, total) in per_bot.items()}


def ranks(aps: dict[str, float]) -> dict[str, int]:
    """1-based rank by APS, ties broken by name (as the daily snapshot ranks)."""
    return {name: i + 1 for i, name in enumerate(sorted(aps, key=lambda n: (-aps[n], n)))}


def preview(battles: list[Battle], active: set[str], uploader: str) -> dict:
    """The table now and without ``uploader``: rows in the new order with rank and APS before and
    after, the battles it would remove and the pairings left with no battle."""
    now, after = aps_table(battles, active), aps_table(battles, active, uploader)
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
    pairs_now = {(a, b) for u, a, b, _, _ in battles if a in active and b in active}
    pairs_after = {(a, b) for u, a, b, _, _ in battles if u != uploader and a in active and b in active}
    return {
        "uploader": uploader,
        "battles": sum(1 for u, *_ in battles if u == uploader),
        "pairings_lost": len(pairs_now - pairs_after),
        "bots_dropped": sorted(set(now) - set(after)),
        "rows": rows,
    }
