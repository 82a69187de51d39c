"""Where the batch methods disagree: each bot's spread of ranks, and the method furthest from APS.

The alternative-rankings page lists every bot's rank under every method side by side (as
Darkcanuck's comparison table did) and highlights what a reader should look at first:

- ``spread``: the bot's largest rank minus its smallest, over APS and every method that ranked it
  (but Vote);
- ``top_spread``: True for the bots with the largest spreads, the top TOP_SHARE of the table but
  at least TOP_MIN bots (bots tied with the last one included; a spread of 0 never counts);
- ``furthest``: the method whose rank is furthest from the bot's APS rank (the first such method
  in the table's order on a tie), None when every method agrees with APS.

Vote is left out of both: it gives most bots no vote at all (only the best scorer against each
voter gets one), so they share one rank far down a large table, and their Vote rank would be the
largest disagreement of nearly every row without saying anything about the bot.

Rows are plain dicts with ``<method>_rank`` keys (None where a method did not rank the bot);
the result is new dicts, the input is not changed.
"""

from __future__ import annotations

import math

TOP_SHARE = 0.05  # a twentieth of the table: 60 of 1,200 bots
TOP_MIN = 3  # so that a small rumble still shows its strongest disagreements
MASSED_TIES = ("vote",)  # methods left out of the marks (see above)


def annotate(rows: list[dict], methods: list[str], reference: str = "aps") -> list[dict]:
    """``rows`` with ``spread``, ``furthest`` and ``top_spread`` added (see the module docstring)."""
    compared = [m for m in methods if m not in MASSED_TIES]
    out = [{**row, **_disagreement(row, compared, reference)} for row in rows]
    threshold = _threshold([row["spread"] for row in out if row["spread"]], len(out))
    for row in out:
        row["top_spread"] = bool(row["spread"]) and row["spread"] >= threshold
    return out


def _disagreement(row: dict, methods: list[str], reference: str) -> dict:
    ranks: dict[str, int] = {m: r for m in [reference, *methods] if (r := row.get(f"{m}_rank")) is not None}
    spread = max(ranks.values()) - min(ranks.values()) if ranks else None
    base = ranks.get(reference)
    furthest, distance = None, 0
    if base is not None:
        for method in methods:
            if method in ranks and abs(ranks[method] - base) > distance:
                furthest, distance = method, abs(ranks[method] - base)
    return {"spread": spread, "furthest": furthest}


def _threshold(spreads: list[int], table: int) -> float:
    """The smallest spread still among the top ones of a table of ``table`` bots (infinity if none)."""
    if not spreads:
        return math.inf
    count = max(TOP_MIN, math.ceil(TOP_SHARE * table))
    ordered = sorted(spreads, reverse=True)
    return ordered[min(count, len(ordered)) - 1]
