"""What the pages and the API both show, built once: the rankings table and the statistics page.

Views in ``pages`` and ``api`` render these as HTML or JSON, so a page and its JSON cannot disagree.
"""

from __future__ import annotations

import ipaddress
from datetime import timedelta

from flask import current_app

from rumble.rankings import page_figures, ties
from rumble.ratings import weng_lin
from rumble.ratings.columns import RATINGS
from rumble.ratings.online import provisional
from rumble.store import format_time, jars, melee_battles, pairings, stats, tables, trust, upload_stats
from rumble.store.rumbles import rumble_id, rumble_rows
from rumble.web import confidence_data, now
from rumble.web.lookup import STATS_DAYS

COLUMN_TITLES = {
    "aps": "APS",
    "aps_ci": "APS CI",
    "pwin": "PWIN",
    "pl": "PL",
    "survival": "Survival",
    **{rating.name: rating.title for rating in RATINGS},  # rumble.ratings.columns
    "pairings": "Pairings",
    "battles": "Battles",
    "last_battle": "Last battle (UTC)",
}
# A melee rumble's columns from its whole battles (rumble/ingest/melee.py), after XonStat Elo (which in a
# melee rumble is the battle-level one too).
# A listed bot with no battle after this long is shown as stuck (/RumbleStats, the feed): a client
# runs every listed bot within its first iterations, which take minutes.
STUCK_AFTER = timedelta(days=1)
MELEE_TITLES = {"mu": "μ", "sigma": "σ", "conservative": "μ − 3σ", "melee_battles": "Melee battles"}


def columns(melee: bool) -> dict[str, str]:
    """The rankings columns in page order: a melee rumble's Weng-Lin columns come after XonStat Elo."""
    if not melee:
        return COLUMN_TITLES
    keys = list(COLUMN_TITLES)
    at = keys.index("xonstat") + 1
    return {**{k: COLUMN_TITLES[k] for k in keys[:at]}, **MELEE_TITLES, **{k: COLUMN_TITLES[k] for k in keys[at:]}}


def ranking_table(db, rid: int, order: str, moment: float, melee: bool = False) -> tuple[list[dict], str, str]:
    """The rankings rows in ``order`` with provisional marks and statistical ties, and the stability
    banner (state, text): what /Rankings and /api/v1 show, with deviations grown up to ``moment``
    (seconds since 1970). A melee rumble's rows also carry its Weng-Lin columns, which ``order`` may
    name. KeyError for an unknown order."""
    # A melee rumble shows the whole-battle XonStat Elo (_with_melee), so it sorts by that one too.
    melee_order = melee and order.lstrip("-") in (*MELEE_TITLES, "xonstat")
    rows = [
        with_provisional(page_figures.deviations_now(row, moment))
        for row in tables.ranking_rows(db, rid, "-aps" if melee_order else order)
    ]
    if melee:
        with_melee(rows, melee_battles.ratings_by_name(db, rid), order if melee_order else None, moment)
    counts = pairings.ci_counts(db, rid)  # the ties use the LOS's variance of each APS, not the bare CI
    found = [confidence_data.standing(r, counts) for r in rows]
    variances = [None if s is None else s.variance for s in found]
    for row, (best, worst) in zip(rows, ties.rank_ranges([r["aps"] for r in rows], variances)):
        row["rank_range"], row["tied"] = [best, worst], best != worst
    confidence_data.with_los_to_next(db, rid, rows)  # "LOS to next", by APS whatever the order
    state, banner = ties.stability([r["pairings"] for r in rows], tables.unrated_since_last_event(db, rid))
    return rows, state, banner


def with_provisional(row: dict) -> dict:
    """Mark a bot whose Glicko-2 deviation (grown up to now) is high (rumble.ratings.online.provisional)."""
    row["provisional"] = row["glicko2_rd"] is None or provisional(row["glicko2_rd"])
    return row


def melee_values(rating: melee_battles.MeleeRating | None, moment: float) -> dict:
    """A bot's whole-battle melee ratings (a melee ratings row, or None before its first rated
    battle): Weng-Lin mu, sigma grown for its inactivity up to ``moment``, mu − 3σ, rated melee
    battles and XonStat Elo."""
    if rating is None:
        return {"mu": None, "sigma": None, "conservative": None, "melee_battles": 0, "xonstat": None}
    sigma = weng_lin.grown_sigma(rating.sigma, rating.rated_at, moment)
    return {
        "mu": rating.mu,
        "sigma": sigma,
        "conservative": weng_lin.conservative(rating.mu, sigma),
        "melee_battles": rating.battles,
        "xonstat": rating.xonstat,
    }


def with_melee(rows: list[dict], found: dict, order: str | None, moment: float) -> None:
    """Add each bot's Weng-Lin mu, sigma (grown for its inactivity up to ``moment``), mu − 3σ and rated
    melee battles, and its XonStat Elo from whole battles; sort by ``order`` if it is one of those."""
    for row in rows:
        row.update(melee_values(found.get(row["name"]), moment))
    if order:
        key, descending = order.lstrip("-"), order.startswith("-")
        present = sorted((r for r in rows if r[key] is not None), key=lambda r: r[key], reverse=descending)
        rows[:] = present + [r for r in rows if r[key] is None]


def stats_page(db, game: str | None) -> dict:
    """What /RumbleStats and /api/v1's stats show, for one rumble or (``game`` None) all of them."""
    rid = rumble_id(db, game) if game else None
    since = format_time(now() - timedelta(days=STATS_DAYS))
    return {
        "game": game,
        "days": STATS_DAYS,
        "rumbles": [r for r in rumble_rows(db) if game is None or r["name"] == game],
        "uploaders": stats.uploaders(db, rid, since),
        "uploads_per_day": stats.uploads_per_day(db, rid, since),
        "lacking_pairings": stats.lacking_pairings(db, rid) if rid is not None else [],
        "stuck": stuck_bots(db, game, rid) if game is not None and rid is not None else [],
        "stuck_after_hours": STUCK_AFTER // timedelta(hours=1),
        "standings": public_standings(db, rid) if rid is not None else [],
        "uploads": upload_stats.per_day(db, game, since[:10]),
        "upload_errors": upload_stats.latest_errors(db) if game is None else [],
        "retirements": [dict(r, source=public_source(r["source"])) for r in stats.retirements(db, rid)],
    }


def stuck_bots(db, game: str, rid: int) -> list[dict]:
    """Bots listed on ``game``'s participants list for STUCK_AFTER or longer that have had no battle
    in it: a jar the clients cannot run, or a list no client reads. A division follows its
    family's list, where a bot that does not fit the division rightly never fights: none there."""
    settings = current_app.extensions["rumble.rumbles"].get(game)
    if settings is None or (settings.family or game) != game:
        return []
    return jars.stuck(db, game, rid, format_time(now() - STUCK_AFTER))


def public_standings(db, rid: int) -> list[dict]:
    """Each uploader's standing in the rumble (who may retire bots, and why), established first, as
    the hourly run last computed it; a maintainer's vouch or revocation since then shows at once."""
    said = {w["party"]: w for w in trust.words(db)}
    rows = []
    for party, row in trust.standings(db, rid).items():
        word = said.get(party)
        if word is not None and row["how"] != word["standing"]:  # said after the last computation
            vouched = word["standing"] == "vouched"
            row = {**row, "established": vouched, "how": word["standing"], "why": f"{word['standing']} by a maintainer"}
        name, _, network = party.rpartition("@")
        rows.append({"uploader": name, "network": network, **{k: v for k, v in row.items() if k != "party"}})
    for party in said.keys() - {f"{r['uploader']}@{r['network']}" for r in rows}:
        vouched, (name, _, network) = said[party]["standing"] == "vouched", party.rpartition("@")
        why = f"{said[party]['standing']} by a maintainer"
        rows.append(
            dict(uploader=name, network=network, established=vouched, how=said[party]["standing"], why=why)
            | dict(battles_shared=0, pairings_shared=0, p=None, computed_at=None)
        )
    return sorted(rows, key=lambda r: (not r["established"], r["uploader"], r["network"]))


def public_source(source: str) -> str:
    """A retirement's source as the public pages show it: the address (after the last " from ")
    cut to its network, /24 or /48, so that an author sees who retired their bot and where from
    without the page publishing uploaders' addresses (/admin shows them whole)."""
    head, found, addr = source.rpartition(" from ")
    if not found:
        return source
    try:
        ip = ipaddress.ip_address(addr)
    except ValueError:
        return head
    if ip.version == 4:
        return f"{head} from {'.'.join(str(ip).split('.')[:3])}.x"
    return f"{head} from {ipaddress.ip_network(f'{ip}/48', strict=False)}"
