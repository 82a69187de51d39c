"""What the pages and the API show of the confidence figures: the likelihood of superiority (LOS to
the next bot on /Rankings, the top-20 matrix on /AlternativeRankings) and the version test on
/BotCompare and /api/v1 (rumble.rankings.superiority and rumble.rankings.version_test)."""

from __future__ import annotations

import re
from dataclasses import asdict

from rumble.protocol.names import split_name
from rumble.rankings import superiority, version_test
from rumble.store import pairings

DELTA_TEXT = re.compile(r"[0-9]{1,2}(\.[0-9]{1,3})?")  # ASCII digits only, as rumble.parameters
DELTA_RANGE = (0.1, 20.0)  # APS points: below 0.1 no rumble decides; above 20 the question is moot


def standing(row: dict, ci_counts: dict[str, int]) -> superiority.Standing | None:
    """A rankings row as the LOS and the statistical ties need it (its APS variance counting its
    single-battle pairings, and its battle variance; superiority.standing); None for a bot without an APS."""
    if row["aps"] is None:
        return None
    k = ci_counts.get(row["name"])
    return superiority.standing(row["name"], row["aps"], row["aps_ci"], row["pairings"], k, row["battles"])


def shared_terms(db, rid: int, pairs: list[tuple[superiority.Standing, superiority.Standing]]) -> list[float]:
    """The shared-pairing term of each pair (superiority.shared_variance), from the stored pairings."""
    moments = pairings.moments_by_name(db, rid, [(a.name, b.name) for a, b in pairs])
    terms = []
    for a, b in pairs:
        found = moments.get((a.name, b.name))
        se2 = superiority.squared_error(*found) if found else None
        terms.append(superiority.shared_variance(a, b, se2, found is not None))
    return terms


def with_los_to_next(db, rid: int, rows: list[dict]) -> None:
    """Set each row's ``los_next``: the LOS over the bot just below it by APS (whatever the rows'
    order; None for the last bot and for a bot without an APS interval)."""
    ranked = sorted((r for r in rows if r["aps"] is not None), key=lambda r: r["rank"])
    counts = pairings.ci_counts(db, rid)
    found = [standing(r, counts) for r in ranked]
    listed = [s for s in found if s is not None]
    chances = superiority.los_to_next(listed, shared_terms(db, rid, list(zip(listed, listed[1:]))))
    for row in rows:
        row["los_next"] = None
    for row, chance in zip(ranked, chances):
        row["los_next"] = chance


def los_matrix(db, rid: int, size: int = superiority.MATRIX_SIZE) -> dict:
    """The pairwise LOS of the top ``size`` bots by APS: names, aps and rows[i][j] = LOS(i > j)."""
    rows = pairings.top_by_aps(db, rid, size)
    found = [standing(r, {r["name"]: r["ci_count"] for r in rows}) for r in rows]
    top = [s for s in found if s is not None]
    pairs = [(i, j) for i in range(len(top)) for j in range(i + 1, len(top))]
    terms = shared_terms(db, rid, [(top[i], top[j]) for i, j in pairs])
    matrix = superiority.los_matrix(top, dict(zip(pairs, terms)))
    return {"names": [s.name for s in top], "aps": [s.aps for s in top], "los": matrix}


def same_bot(a: str, b: str) -> bool:
    """True for two different versions of one bot (the same package.Class)."""
    (pa, ca, va), (pb, cb, vb) = split_name(a), split_name(b)
    return (pa, ca) == (pb, cb) and va != vb


def version_test_of(page: dict, delta: float = version_test.DELTA) -> dict | None:
    """The version test of a /BotCompare page's A (new) against B (old), over the page's rows; None
    unless A and B are two versions of one bot."""
    if not same_bot(page["bota"], page["botb"]):
        return None
    rows = page["rows"]
    battles = sum(r["a_battles"] + r["b_battles"] for r in rows)
    outcome = version_test.version_test([r["diff"] for r in rows], battles, delta=delta)
    return {"new": page["bota"], "old": page["botb"], **asdict(outcome), "min_opponents": version_test.MIN_OPPONENTS}


def parse_delta(text: str | None) -> float:
    """The ``delta`` parameter (APS points, default 1), or ValueError saying what is wrong."""
    if text is None:
        return version_test.DELTA
    low, high = DELTA_RANGE
    if DELTA_TEXT.fullmatch(text) and low <= float(text) <= high:
        return float(text)
    raise ValueError(f"delta must be a number of APS points from {low:g} to {high:g} (like 0.5), not {text[:20]!r}")
