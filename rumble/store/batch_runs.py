"""Batch rankings in the store: a rumble's pairing matrix in, each run's ranks and pairing values out.

The tables are described in ``migrations/0004_batch_rankings.sql``: every run's metadata is kept,
ranks only for each method's latest run, the per-pairing KNNPBI and NPP for the latest run that
computed them, packed one row per bot.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from rumble.rankings.pairwise import Ranking
from rumble.store import Store, row_id
from rumble.store.rating_rows import version
from rumble.store.rumbles import by_survival

# One row of the matrix query, read straight into numpy (no Python object per row survives).
_CELL = np.dtype([("bot", "i8"), ("opponent", "i8"), ("aps", "f8")])
_WIN_CELL = np.dtype([("first", "i8"), ("second", "i8"), ("won", "f8"), ("battles", "i8")])
# One packed pairing of batch_pairings.pairings (see the migration).
PAIRING_RECORD = np.dtype([("opponent", "<i4"), ("knnpbi", "<f4"), ("npp", "<f4")])


@dataclass(frozen=True, eq=False)
class Matrix:
    """A rumble's active bots in id order and d[X, Y] = X's pairing APS against Y in percent (NaN: none);
    ``wins[X, Y]``: X's pairing win rate against Y in percent (battles won, a drawn battle half, over
    the pairing's battles, with one virtual draw: ``win_rates``), NaN where they never met."""

    ids: np.ndarray
    names: list[str]
    d: np.ndarray
    wins: np.ndarray | None = None


@dataclass(frozen=True)
class Seen:
    """What a run saw of its rumble: the battle count and the version of its log."""

    battles: int
    last_battle_id: int
    last_event_id: int
    generation: int


@dataclass(frozen=True, eq=False)
class RunRecord:
    """One batch run as it is stored: ``ranks`` and ``pairings`` index bots as ``bot_ids`` does."""

    methods: tuple[str, ...]
    source: str
    started_at: str
    finished_at: str
    seen: Seen
    bot_ids: np.ndarray
    ranks: dict[str, Ranking]
    pairings: dict[str, np.ndarray] | None = None  # {"knnpbi": matrix, "npp": matrix}
    failures: dict[str, str] = field(default_factory=dict)


def read_matrix(db: Store, rumble_id: int) -> Matrix:
    """The pairing matrix of the rumble's active bots; call inside ``store.read`` with ``seen``.

    Reads the active bots' pairings through the participants' key (never the retired bots'
    rows), then keeps those whose opponent is active too, with numpy.
    """
    bots = db.execute(
        "SELECT b.id, b.full_name FROM participants p JOIN bots b ON b.id = p.bot_id "
        "WHERE p.rumble_id = ? AND p.active = 1 ORDER BY b.id",
        (rumble_id,),
    ).fetchall()
    ids = np.array([bot for bot, _ in bots], dtype=np.int64)
    d = np.full((len(ids), len(ids)), np.nan)
    cells = np.fromiter(
        db.execute(
            "SELECT x.bot_id, x.opponent_id, x.aps FROM participants p CROSS JOIN pairings x "
            "ON x.rumble_id = p.rumble_id AND x.bot_id = p.bot_id WHERE p.rumble_id = ? AND p.active = 1",
            (rumble_id,),
        ),
        dtype=_CELL,
    )
    if len(ids) and len(cells):
        row = np.searchsorted(ids, cells["bot"])
        col = np.searchsorted(ids, cells["opponent"]).clip(max=len(ids) - 1)
        active = ids[col] == cells["opponent"]
        d[row[active], col[active]] = cells["aps"][active]
    return Matrix(ids, [name for _, name in bots], d, win_rates(db, rumble_id, ids))


def win_rates(db: Store, rumble_id: int, ids: np.ndarray) -> np.ndarray:
    """w[X, Y] = 100·(battles X won + ½ drawn + ½)/(battles of the pairing + 1), over the log's
    counted battles, for the bots ``ids`` (sorted); NaN where they never met. A battle is won by the
    side with the larger share of what the rumble scores (score, or rounds won in a rumble scored
    by survival). The one virtual drawn battle per pairing (Laplace's rule of succession) keeps
    every rate inside (0, 100): a bot that won every battle of every pairing, common in a rumble,
    would otherwise have no finite batch Elo (Zermelo's condition)."""
    first, second = ("first_firsts", "second_firsts") if by_survival(db, rumble_id) else ("first_score", "second_score")
    w = np.full((len(ids), len(ids)), np.nan)
    cells = np.fromiter(
        db.execute(
            f"SELECT first_bot_id, second_bot_id, sum(({first} > {second}) + 0.5 * ({first} = {second})), count(*) "
            "FROM battles WHERE rumble_id = ? AND state = 'ok' GROUP BY first_bot_id, second_bot_id",
            (rumble_id,),
        ),
        dtype=_WIN_CELL,
    )
    if not (len(ids) and len(cells)):
        return w
    won = np.zeros((len(ids), len(ids)))
    played = np.zeros((len(ids), len(ids)))
    a = np.searchsorted(ids, cells["first"]).clip(max=len(ids) - 1)
    b = np.searchsorted(ids, cells["second"]).clip(max=len(ids) - 1)
    known = (ids[a] == cells["first"]) & (ids[b] == cells["second"])
    a, b, cells = a[known], b[known], cells[known]
    np.add.at(won, (a, b), cells["won"])  # both orders of a pair add up
    np.add.at(won, (b, a), cells["battles"] - cells["won"])
    np.add.at(played, (a, b), cells["battles"])
    np.add.at(played, (b, a), cells["battles"])
    np.divide(100.0 * (won + 0.5), played + 1.0, out=w, where=played > 0)
    return w


def seen(db: Store, rumble_id: int) -> Seen:
    """The rumble's battles in state 'ok' and its log version, as a run records them."""
    battles = db.execute("SELECT count(*) FROM battles WHERE rumble_id = ? AND state = 'ok'", (rumble_id,)).fetchone()[
        0
    ]
    return Seen(battles, *version(db, rumble_id))


def save_run(db: Store, rumble_id: int, run: RunRecord) -> int:
    """Store ``run`` (inside the caller's write transaction) and return its id.

    The ranks of the methods it ran replace their previous rows (a method that failed loses its
    old ranks: they belong to an older log); its pairing values, if any, replace the old ones.
    """
    failures = "\n".join(f"{method}: {reason}" for method, reason in run.failures.items()) or None
    run_id = row_id(
        db.execute(
            "INSERT INTO batch_runs (rumble_id, methods, source, started_at, finished_at, bots, battles, "
            "last_battle_id, last_event_id, generation, failures) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                rumble_id,
                ",".join(run.methods),
                run.source,
                run.started_at,
                run.finished_at,
                len(run.bot_ids),
                run.seen.battles,
                run.seen.last_battle_id,
                run.seen.last_event_id,
                run.seen.generation,
                failures,
            ),
        )
    )
    replaced = set(run.ranks) | set(run.failures) | {"aps"}
    db.conn.executemany(
        "DELETE FROM batch_ranks WHERE rumble_id = ? AND method = ?", [(rumble_id, m) for m in sorted(replaced)]
    )
    db.conn.executemany(
        "INSERT INTO batch_ranks (rumble_id, method, bot_id, run_id, rank, score) VALUES (?, ?, ?, ?, ?, ?)",
        (
            row
            for method, ranking in run.ranks.items()
            for row in _rank_rows(rumble_id, method, run_id, run.bot_ids, ranking)
        ),
    )
    if run.pairings is not None:
        db.execute("DELETE FROM batch_pairings WHERE rumble_id = ?", (rumble_id,))
        db.conn.executemany(
            "INSERT INTO batch_pairings (rumble_id, bot_id, run_id, pairings) VALUES (?, ?, ?, ?)",
            ((rumble_id, int(bot), run_id, _pack(run.bot_ids, run.pairings, i)) for i, bot in enumerate(run.bot_ids)),
        )
    return run_id


def _rank_rows(rumble_id: int, method: str, run_id: int, bot_ids: np.ndarray, ranking: Ranking):
    scores = ranking.scores if ranking.scores is not None else [None] * len(bot_ids)
    for bot, rank, score in zip(bot_ids.tolist(), ranking.ranks.tolist(), list(scores)):
        yield rumble_id, method, bot, run_id, rank, None if score is None or not math.isfinite(score) else float(score)


def _pack(bot_ids: np.ndarray, pairings: dict[str, np.ndarray], i: int) -> bytes:
    """Bot i's present pairings as PAIRING_RECORD bytes."""
    knnpbi, npp = pairings["knnpbi"][i], pairings["npp"][i]
    met = np.isfinite(knnpbi) | np.isfinite(npp)
    records = np.empty(int(met.sum()), dtype=PAIRING_RECORD)
    records["opponent"], records["knnpbi"], records["npp"] = bot_ids[met], knnpbi[met], npp[met]
    return records.tobytes()


def pairing_values(db: Store, rumble_id: int, bot: int) -> dict[str, tuple[float, float]]:
    """Opponent name -> (KNNPBI, NPP) of ``bot``'s pairings in the latest run that computed them."""
    row = db.execute(
        "SELECT pairings FROM batch_pairings WHERE rumble_id = ? AND bot_id = ?", (rumble_id, bot)
    ).fetchone()
    if row is None:
        return {}
    records = np.frombuffer(row[0], dtype=PAIRING_RECORD)
    names = dict(
        db.execute(
            f"SELECT id, full_name FROM bots WHERE id IN ({', '.join('?' * len(records))})",
            records["opponent"].tolist(),
        ).fetchall()
    )
    return {names[int(r["opponent"])]: (float(r["knnpbi"]), float(r["npp"])) for r in records}


def stale_rumbles(db: Store, complete: tuple[str, ...]) -> list[str]:
    """Rumbles with battles whose log changed since their last complete run (or that have none).

    A complete run is one that ran exactly the methods ``complete``; it is current while the
    rumble's newest battle id, newest participant-event id and generation are the ones it saw.
    A rumble whose run failed in some method is not stale again until its log changes.
    """
    rows = db.execute(
        "SELECT v.name FROM (SELECT r.id, r.name, r.generation, "
        "(SELECT max(b.id) FROM battles b WHERE b.rumble_id = r.id) AS last_battle, "
        "(SELECT coalesce(max(e.id), 0) FROM participant_events e WHERE e.rumble_id = r.id) AS last_event "
        "FROM rumbles r) v "
        "WHERE v.last_battle IS NOT NULL AND NOT EXISTS (SELECT 1 FROM batch_runs x WHERE x.rumble_id = v.id "
        "AND x.methods = ? AND x.last_battle_id = v.last_battle AND x.last_event_id = v.last_event "
        "AND x.generation = v.generation) ORDER BY v.id",
        (",".join(complete),),
    ).fetchall()
    return [name for (name,) in rows]


RUN_COLUMNS = ("id", "methods", "source", "started_at", "finished_at", "bots", "battles", "failures")


def runs(db: Store, rumble_id: int, limit: int = 10) -> list[dict]:
    """The rumble's latest runs, newest first."""
    rows = db.execute(
        f"SELECT {', '.join(RUN_COLUMNS)} FROM batch_runs WHERE rumble_id = ? ORDER BY id DESC LIMIT ?",
        (rumble_id, limit),
    ).fetchall()
    return [_run_dict(row) for row in rows]


def _run_dict(row: tuple) -> dict:
    run = dict(zip(RUN_COLUMNS, row))
    run["methods"] = run["methods"].split(",") if run["methods"] else []
    run["failures"] = run["failures"].splitlines() if run["failures"] else []
    for key in ("started_at", "finished_at"):
        run[key] = run[key][:19]
    return run


def alternative_rankings(db: Store, rumble_id: int, methods: tuple[str, ...]) -> dict:
    """The page behind /AlternativeRankings: every ranked bot's rank and score under APS and ``methods``.

    Returns ``methods`` (those with ranks stored, in the given order), ``method_runs`` (method ->
    the run its ranks come from), ``runs`` (those runs, newest first) and ``rows``: one flat dict
    per bot of the latest APS ranking (``name``, ``<method>_rank``, ``<method>_score``), in APS
    order, with the disagreement marks of ``rumble.rankings.disagreement.annotate``.
    """
    from rumble.rankings.disagreement import annotate

    bots: dict[str, dict] = {}
    method_runs: dict[str, int] = {}
    for method, name, rank, score, run_id in db.execute(
        "SELECT k.method, b.full_name, k.rank, k.score, k.run_id FROM batch_ranks k JOIN bots b ON b.id = k.bot_id "
        "WHERE k.rumble_id = ?",
        (rumble_id,),
    ):
        bots.setdefault(name, {"name": name})[f"{method}_rank"] = rank
        bots[name][f"{method}_score"] = score
        method_runs[method] = run_id
    shown = [m for m in methods if m in method_runs]
    keys = [f"{m}_{part}" for m in ("aps", *shown) for part in ("rank", "score")]
    rows = sorted((row for row in bots.values() if "aps_rank" in row), key=lambda r: (r["aps_rank"], r["name"]))
    rows = [{"name": row["name"], **{key: row.get(key) for key in keys}} for row in rows]
    return {
        "methods": shown,
        "method_runs": {m: method_runs[m] for m in ("aps", *shown) if m in method_runs},
        "runs": _runs_by_id(db, sorted(set(method_runs.values()), reverse=True)),
        "rows": annotate(rows, shown),
    }


def _runs_by_id(db: Store, ids: list[int]) -> list[dict]:
    rows = db.execute(
        f"SELECT {', '.join(RUN_COLUMNS)} FROM batch_runs WHERE id IN ({', '.join('?' * len(ids))}) ORDER BY id DESC",
        ids,
    ).fetchall()
    return [_run_dict(row) for row in rows]
