"""The queries behind the bot-details, pairing and comparison pages: one call per page, plain dicts out.

Each page function reads in one snapshot (``store.read``) and returns everything the page and its
JSON twin show; the figures come from the pure functions of ``rumble.rankings.page_figures``.
"""

from __future__ import annotations

import math

from rumble.rankings import page_figures
from rumble.rankings.scores import Pairing, battle_percent, survival_percent
from rumble.ratings.columns import STORED
from rumble.store import Store, read
from rumble.store.batch_runs import pairing_values
from rumble.store.rumbles import by_survival
from rumble.store.tables import SUMMARY_COLUMNS

RATING_COLUMNS = STORED  # every rating's stored values (rumble.ratings.columns)
PAIRING_ORDER = (
    "name",
    "aps",
    "aps_ci",
    "survival",
    "battles",
    "last_battle",
    "expected",
    "pbi",
    "knnpbi",
    "npp",
    "opponent_aps",
)
COMPARE_ORDER = ("name", "a_aps", "b_aps", "diff", "a_survival", "b_survival", "diff_survival", "opponent_aps")


def find_participant(db: Store, rumble_id: int, name: str) -> dict | None:
    """The rumble's participant called ``name`` ({id, name, active}), or None.

    As LiteRumble, a name with ``_`` where the bot has a space (the RatingsFile form) is found by
    trying each ``_`` as a space in turn.
    """
    candidates = [name] + [name[:i] + " " + name[i + 1 :] for i, c in enumerate(name) if c == "_"]
    for candidate in candidates:
        row = db.execute(
            "SELECT b.id, b.full_name, p.active FROM bots b JOIN participants p ON p.bot_id = b.id "
            "WHERE p.rumble_id = ? AND b.full_name = ?",
            (rumble_id, candidate),
        ).fetchone()
        if row is not None:
            return {"id": row[0], "name": row[1], "active": bool(row[2])}
    return None


def _summary(db: Store, rumble_id: int, bot: int, now: float | None = None) -> dict:
    """The bot's row of the rankings table (scores, every rating with its deviations grown up to
    ``now``, latest batch ranks); None values before a battle."""
    row = db.execute(
        "SELECT s.aps, s.aps_ci, s.pwin, s.pl, s.survival, s.pairings, s.battles, substr(s.last_battle, 1, 19), "
        "s.wins, s.draws, s.losses, " + ", ".join(f"g.{c}" for c in RATING_COLUMNS) + ", g.rated_at FROM (SELECT 1) "
        "LEFT JOIN bot_summaries s ON s.rumble_id = ? AND s.bot_id = ? "
        "LEFT JOIN ratings g ON g.rumble_id = ? AND g.bot_id = ?",
        (rumble_id, bot, rumble_id, bot),
    ).fetchone()
    summary = dict(zip(SUMMARY_COLUMNS, row[: len(SUMMARY_COLUMNS)]))
    ratings = dict(zip((*RATING_COLUMNS, "rated_at"), row[len(SUMMARY_COLUMNS) :]))
    summary["ratings"] = page_figures.deviations_now(ratings, now) if ratings["elo"] is not None else None
    summary["batch"] = {
        method: {"rank": rank, "score": score}
        for method, rank, score in db.execute(
            "SELECT method, rank, score FROM batch_ranks WHERE rumble_id = ? AND bot_id = ? AND method != 'aps' ORDER BY method",
            (rumble_id, bot),
        )
    }
    return summary


def _pairings(db: Store, rumble_id: int, bot: int, elo: float | None) -> list[dict]:
    """Every pairing of ``bot`` with the opponent's state, Elo and APS, and the pairing's page_figures."""
    rows = db.execute(
        "SELECT o.full_name, p.active, x.battles, x.aps, x.aps_m2, x.survival, x.last_battle, g.elo, s.aps "
        "FROM pairings x JOIN bots o ON o.id = x.opponent_id "
        "JOIN participants p ON p.rumble_id = x.rumble_id AND p.bot_id = x.opponent_id "
        "LEFT JOIN ratings g ON g.rumble_id = x.rumble_id AND g.bot_id = x.opponent_id "
        "LEFT JOIN bot_summaries s ON s.rumble_id = x.rumble_id AND s.bot_id = x.opponent_id "
        "WHERE x.rumble_id = ? AND x.bot_id = ?",
        (rumble_id, bot),
    ).fetchall()
    batch = pairing_values(db, rumble_id, bot)
    out = []
    for name, active, battles, aps, aps_m2, survival, last, opponent_elo, opponent_aps in rows:
        pairing = Pairing(battles, aps, aps_m2, survival, last)
        knnpbi, npp = (v if v is not None and math.isfinite(v) else None for v in batch.get(name, (None, None)))
        out.append(
            {
                "name": name,
                "active": bool(active),
                "aps": aps,
                "survival": survival,
                "battles": battles,
                "last_battle": last[:19],
                **page_figures.pairing_figures(pairing, elo, opponent_elo),
                "knnpbi": knnpbi,
                "npp": npp,
                "opponent_aps": opponent_aps,
            }
        )
    return out


def bot_details(db: Store, rumble_id: int, name: str, order: str = "name", now: float | None = None) -> dict | None:
    """The bot-details page: ``bot``, ``summary`` and its ``pairings`` sorted by ``order``; None if no such bot.
    ``now`` (s since 1970): the deviations are shown grown for the bot's inactivity up to then.

    Raises KeyError for an ``order`` not in PAIRING_ORDER.
    """
    with read(db):
        bot = find_participant(db, rumble_id, name)
        if bot is None:
            return None
        summary = _summary(db, rumble_id, bot["id"], now)
        elo = summary["ratings"]["elo"] if summary["ratings"] else None
        pairings = page_figures.sort_rows(_pairings(db, rumble_id, bot["id"], elo), order, PAIRING_ORDER)
        versions = other_versions(db, rumble_id, bot["id"])
    return {
        "bot": {"name": bot["name"], "active": bot["active"]},
        "summary": summary,
        "pairings": pairings,
        "versions": versions,
    }


VERSION_COLUMNS = ("name", "active", "rank", "aps", "pairings", "battles", "elo", "glicko2", "last_battle")


def other_versions(db: Store, rumble_id: int, bot: int) -> list[dict]:
    """The rumble's other bots of the same package and class (other versions), newest first, with
    their APS rank among the active bots (None for a retired one)."""
    rows = db.execute(
        "SELECT o.full_name, p.active, CASE WHEN p.active AND s.aps IS NOT NULL THEN 1 + ("
        "  SELECT count(*) FROM bot_summaries t JOIN participants q ON q.rumble_id = t.rumble_id AND q.bot_id = t.bot_id "
        "  WHERE t.rumble_id = s.rumble_id AND q.active = 1 AND t.aps > s.aps) END, "
        "s.aps, s.pairings, s.battles, g.elo, g.glicko2, substr(s.last_battle, 1, 19) "
        "FROM bots me JOIN bots o ON o.package = me.package AND o.class_name = me.class_name AND o.id != me.id "
        "JOIN participants p ON p.rumble_id = ? AND p.bot_id = o.id "
        "LEFT JOIN bot_summaries s ON s.rumble_id = p.rumble_id AND s.bot_id = o.id "
        "LEFT JOIN ratings g ON g.rumble_id = p.rumble_id AND g.bot_id = o.id "
        "WHERE me.id = ? ORDER BY o.created_at DESC, o.id DESC",
        (rumble_id, bot),
    ).fetchall()
    return [{**dict(zip(VERSION_COLUMNS, row)), "active": bool(row[1])} for row in rows]


BATTLE_COLUMNS = (
    "id",
    "received_at",
    "client_time",
    "a_first",
    "a_score",
    "b_score",
    "a_bullet_damage",
    "b_bullet_damage",
    "a_firsts",
    "b_firsts",
    "rounds",
    "uploader",
    "client",
    "state",
)


def _pairing_battles(db: Store, rumble_id: int, a: int, b: int) -> list[dict]:
    """Every logged battle of A and B (either one first), newest first, as seen from A's side."""
    rows = db.execute(
        "SELECT id, received_at, client_time, first_bot_id = ?, "
        "CASE WHEN first_bot_id = ? THEN first_score ELSE second_score END, "
        "CASE WHEN first_bot_id = ? THEN second_score ELSE first_score END, "
        "CASE WHEN first_bot_id = ? THEN first_bullet_damage ELSE second_bullet_damage END, "
        "CASE WHEN first_bot_id = ? THEN second_bullet_damage ELSE first_bullet_damage END, "
        "CASE WHEN first_bot_id = ? THEN first_firsts ELSE second_firsts END, "
        "CASE WHEN first_bot_id = ? THEN second_firsts ELSE first_firsts END, "
        "rounds, (SELECT name FROM uploaders WHERE id = uploader_id), "
        "(SELECT client FROM battle_setups WHERE id = setup_id), state FROM battles "
        # a bot never battles itself, so both IN lists together mean "A and B, in either order"; the
        # form lets battles_by_pairing (migration 0006) serve both orders
        # no ORDER BY: SQLite would walk battles_by_rumble in id order over the whole rumble for it
        "WHERE rumble_id = ? AND first_bot_id IN (?, ?) AND second_bot_id IN (?, ?)",
        (a, a, a, a, a, a, a, rumble_id, a, b, a, b),
    ).fetchall()
    battles = []
    by_rounds = by_survival(db, rumble_id)  # twinduel: the percentage is of rounds won
    for row in sorted(rows, reverse=True):
        battle = dict(zip(BATTLE_COLUMNS, row))
        battle["a_first"] = bool(battle["a_first"])
        battle["received_at"] = battle["received_at"][:19]
        a_share, b_share = (
            (battle["a_firsts"], battle["b_firsts"]) if by_rounds else (battle["a_score"], battle["b_score"])
        )
        battle["a_percent"] = battle_percent(a_share, b_share)
        battle["b_percent"] = battle_percent(b_share, a_share)
        battle["a_survival"] = survival_percent(battle["a_firsts"], battle["rounds"])
        battle["b_survival"] = survival_percent(battle["b_firsts"], battle["rounds"])
        battles.append(battle)
    return battles


def _pairing_row(db: Store, rumble_id: int, a: int, b: int) -> dict | None:
    """A's pairing against B with its CI, or None if they have not met (in a counted battle)."""
    row = db.execute(
        "SELECT battles, aps, aps_m2, survival, last_battle FROM pairings WHERE rumble_id = ? AND bot_id = ? AND opponent_id = ?",
        (rumble_id, a, b),
    ).fetchone()
    if row is None:
        return None
    pairing = Pairing(*row)
    return {
        "battles": pairing.battles,
        "aps": pairing.aps,
        "survival": pairing.survival,
        "last_battle": pairing.last_battle[:19],
        "aps_ci": page_figures.pairing_figures(pairing, None, None)["aps_ci"],
    }


def pairing_page(db: Store, rumble_id: int, name_a: str, name_b: str) -> dict | None:
    """The pairing page: ``bot``, ``vs``, the ``pairing`` averages and its ``battles``; None if a bot is unknown."""
    with read(db):
        a, b = find_participant(db, rumble_id, name_a), find_participant(db, rumble_id, name_b)
        if a is None or b is None:
            return None
        pairing = _pairing_row(db, rumble_id, a["id"], b["id"])
        battles = _pairing_battles(db, rumble_id, a["id"], b["id"])
    return {"bot": a["name"], "vs": b["name"], "pairing": pairing, "battles": battles}


def _live_pairings(db: Store, rumble_id: int, bot: int) -> dict[str, tuple]:
    """Opponent name -> (APS, survival, battles, opponent's APS) of ``bot``'s pairings with active opponents."""
    rows = db.execute(
        "SELECT o.full_name, x.aps, x.survival, x.battles, s.aps FROM pairings x JOIN bots o ON o.id = x.opponent_id "
        "JOIN participants p ON p.rumble_id = x.rumble_id AND p.bot_id = x.opponent_id AND p.active = 1 "
        "LEFT JOIN bot_summaries s ON s.rumble_id = x.rumble_id AND s.bot_id = x.opponent_id "
        "WHERE x.rumble_id = ? AND x.bot_id = ?",
        (rumble_id, bot),
    ).fetchall()
    return {row[0]: row[1:] for row in rows}


def _common_rows(mine: dict[str, tuple], theirs: dict[str, tuple], exclude: set[str]) -> list[dict]:
    """One row per opponent both bots have met (neither of the two bots itself)."""
    rows = []
    for name in sorted(set(mine) & set(theirs) - exclude):
        (a_aps, a_surv, a_battles, opp_aps), (b_aps, b_surv, b_battles, _) = mine[name], theirs[name]
        rows.append(
            {
                "name": name,
                "a_aps": a_aps,
                "b_aps": b_aps,
                "diff": a_aps - b_aps,
                "a_survival": a_surv,
                "b_survival": b_surv,
                "diff_survival": a_surv - b_surv,
                "a_battles": a_battles,
                "b_battles": b_battles,
                "opponent_aps": opp_aps,
            }
        )
    return rows


def bot_compare(
    db: Store, rumble_id: int, name_a: str, name_b: str, order: str = "name", now: float | None = None
) -> dict | None:
    """The comparison page: A and B over their common live opponents, the mean APS difference with its
    paired t-interval and verdict, the win probabilities from the ratings, and A's pairing against B.
    None if a bot is unknown; KeyError for an ``order`` not in COMPARE_ORDER. The win probabilities
    use both bots' deviations grown for their inactivity up to ``now`` (s since 1970)."""
    with read(db):
        a, b = find_participant(db, rumble_id, name_a), find_participant(db, rumble_id, name_b)
        if a is None or b is None:
            return None
        rows = _common_rows(
            _live_pairings(db, rumble_id, a["id"]), _live_pairings(db, rumble_id, b["id"]), {a["name"], b["name"]}
        )
        ratings = [_summary(db, rumble_id, bot["id"], now)["ratings"] for bot in (a, b)]
        head_to_head = _pairing_row(db, rumble_id, a["id"], b["id"])
    interval = page_figures.paired_interval([row["diff"] for row in rows])
    return {
        "bota": a["name"],
        "botb": b["name"],
        "common": len(rows),
        "a_aps": _mean(rows, "a_aps"),
        "b_aps": _mean(rows, "b_aps"),
        "a_survival": _mean(rows, "a_survival"),
        "b_survival": _mean(rows, "b_survival"),
        "diff": {
            "mean": interval.mean,
            "low": interval.low,
            "high": interval.high,
            "confidence": page_figures.CONFIDENCE,
            "method": "paired t-interval over the common opponents",
        },
        "verdict": page_figures.verdict(a["name"], b["name"], interval),
        "win_probability": page_figures.win_probabilities(*ratings),
        "head_to_head": head_to_head,
        "rows": page_figures.sort_rows(rows, order, COMPARE_ORDER),
    }


def _mean(rows: list[dict], key: str) -> float | None:
    return sum(row[key] for row in rows) / len(rows) if rows else None
