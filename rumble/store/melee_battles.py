"""Reassembled melee battles, their bots and the ratings of whole melee battles (rumble/ingest/melee.py)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from rumble.store import Store
from rumble.store.battle_log import log_pages

Figures = tuple[int, int, int]  # a bot's whole-battle score, bullet damage and firsts


@dataclass(frozen=True)
class PairRow:
    """What reassembly needs of one logged melee pair."""

    id: int
    uploader: str
    client_time: int
    received_at: str
    first_id: int
    first: Figures
    second_id: int
    second: Figures


@dataclass(frozen=True)
class MeleeBattle:
    id: int
    first_time: int
    last_time: int
    last_received: str
    pairs: int


@dataclass(frozen=True)
class MeleeRating:
    mu: float
    sigma: float
    rated_at: float
    battles: int
    xonstat: float


_BATTLE = "id, first_time, last_time, last_received, pairs"
_PAIR = (
    "id, (SELECT name FROM uploaders WHERE id = uploader_id), client_time, received_at, first_bot_id, first_score, "
    "first_bullet_damage, first_firsts, "
    "second_bot_id, second_score, second_bullet_damage, second_firsts"
)


def _pair(row: tuple) -> PairRow:
    return PairRow(row[0], row[1], row[2], row[3], row[4], tuple(row[5:8]), row[8], tuple(row[9:12]))


def is_melee(db: Store, rumble_id: int) -> bool:
    row = db.execute("SELECT melee FROM rumbles WHERE id = ?", (rumble_id,)).fetchone()
    return bool(row and row[0])


def pair_row(db: Store, battle_id: int) -> PairRow:
    return _pair(db.execute(f"SELECT {_PAIR} FROM battles WHERE id = ?", (battle_id,)).fetchone())


def iter_pairs(
    db: Store,
    rumble_id: int,
    batch: int = 10_000,
    after: int = 0,
    up_to: int | None = None,
    states: tuple[str, ...] = ("ok",),
) -> Iterator[tuple[str, PairRow]]:
    """(state, pair) of the rumble's pairs in ``states`` with log ids in (after, up_to], in log order (for a rebuild)."""
    for rows in log_pages(db, _PAIR + ", state", rumble_id, after, up_to, states, batch):
        for row in rows:
            yield row[-1], _pair(row[:-1])


def opens_battle(db: Store, battle_id: int) -> bool:
    """True if the logged pair ``battle_id`` opened a reassembled battle (its first pair to arrive)."""
    return db.execute("SELECT 1 FROM melee_battles WHERE id = ?", (battle_id,)).fetchone() is not None


def open_battles(db: Store, rumble_id: int, uploader: str, client_time: int, window_ms: int) -> list[MeleeBattle]:
    """Open battles of ``uploader`` whose client times come within ``window_ms`` of ``client_time``
    (the others cannot take a pair of that time), oldest first."""
    rows = db.execute(
        f"SELECT {_BATTLE} FROM melee_battles WHERE rumble_id = ? AND state = 'open' AND uploader = ? "
        "AND last_time >= ? AND first_time <= ? ORDER BY id",
        (rumble_id, uploader, client_time - window_ms, client_time + window_ms),
    ).fetchall()
    return [MeleeBattle(*row) for row in rows]


def stale_battles(db: Store, rumble_id: int, cutoff: str) -> list[int]:
    """Open battles whose last pair was received at or before ``cutoff``, oldest first."""
    rows = db.execute(
        "SELECT id FROM melee_battles WHERE rumble_id = ? AND state = 'open' AND last_received <= ? "
        "ORDER BY last_received, id",
        (rumble_id, cutoff),
    ).fetchall()
    return [row[0] for row in rows]


def rated_battles_near(db: Store, rumble_id: int, uploader: str, client_time: int, window_ms: int) -> list[MeleeBattle]:
    """Rated battles of ``uploader`` whose client times come within ``window_ms`` of ``client_time``."""
    rows = db.execute(
        f"SELECT {_BATTLE} FROM melee_battles WHERE rumble_id = ? AND uploader = ? AND state = 'rated' "
        "AND last_time >= ? AND first_time <= ? ORDER BY id",
        (rumble_id, uploader, client_time - window_ms, client_time + window_ms),
    ).fetchall()
    return [MeleeBattle(*row) for row in rows]


def entries(db: Store, melee_id: int) -> dict[int, Figures]:
    rows = db.execute(
        "SELECT bot_id, score, bullet_damage, firsts FROM melee_entries WHERE melee_battle_id = ? ORDER BY bot_id",
        (melee_id,),
    ).fetchall()
    return {row[0]: tuple(row[1:]) for row in rows}


def pairs_of(db: Store, melee_id: int) -> set[frozenset[int]]:
    """The bot pairs gathered into a battle (late ones included)."""
    rows = db.execute(
        "SELECT b.first_bot_id, b.second_bot_id FROM melee_pairs m JOIN battles b ON b.id = m.battle_id "
        "WHERE m.melee_battle_id = ?",
        (melee_id,),
    ).fetchall()
    return {frozenset(row) for row in rows}


def create_battle(db: Store, melee_id: int, rumble_id: int, uploader: str, client_time: int, received_at: str) -> None:
    db.execute(
        "INSERT INTO melee_battles (id, rumble_id, uploader, first_time, last_time, last_received, pairs, state) "
        "VALUES (?, ?, ?, ?, ?, ?, 0, 'open')",
        (melee_id, rumble_id, uploader, client_time, client_time, received_at),
    )


def add_pair(db: Store, melee_id: int, pair: PairRow, late: bool) -> None:
    """Record ``pair`` as part of battle ``melee_id`` (its bots' figures too, if new to the battle)."""
    db.execute(
        "INSERT INTO melee_pairs (battle_id, melee_battle_id, late) VALUES (?, ?, ?)", (pair.id, melee_id, int(late))
    )
    if late:
        db.execute("UPDATE melee_battles SET late_pairs = late_pairs + 1 WHERE id = ?", (melee_id,))
        return
    db.execute(
        "UPDATE melee_battles SET first_time = min(first_time, ?), last_time = max(last_time, ?), "
        "last_received = max(last_received, ?), pairs = pairs + 1 WHERE id = ?",
        (pair.client_time, pair.client_time, pair.received_at, melee_id),
    )
    db.conn.executemany(
        "INSERT OR IGNORE INTO melee_entries (melee_battle_id, bot_id, score, bullet_damage, firsts) VALUES (?, ?, ?, ?, ?)",
        [(melee_id, pair.first_id, *pair.first), (melee_id, pair.second_id, *pair.second)],
    )


def battle_time(db: Store, melee_id: int) -> str:
    return db.execute("SELECT last_received FROM melee_battles WHERE id = ?", (melee_id,)).fetchone()[0]


def close_battle(db: Store, melee_id: int, closed_by: str, after_battle_id: int) -> None:
    db.execute(
        "UPDATE melee_battles SET state = 'rated', closed_by = ?, closed_after_battle_id = ? WHERE id = ?",
        (closed_by, after_battle_id, melee_id),
    )


def put_entry_ratings(db: Store, melee_id: int, rows: Iterable[tuple]) -> None:
    """Write (bot, rank, mu before, sigma before, mu after, sigma after, xonstat before, xonstat after) rows."""
    db.conn.executemany(
        "UPDATE melee_entries SET rank = ?, mu_before = ?, sigma_before = ?, mu_after = ?, sigma_after = ?, "
        "xonstat_before = ?, xonstat_after = ? WHERE melee_battle_id = ? AND bot_id = ?",
        [(*row[1:], melee_id, row[0]) for row in rows],
    )


def ratings_of(db: Store, rumble_id: int, bots: list[int] | None = None) -> dict[int, MeleeRating]:
    sql = "SELECT bot_id, mu, sigma, rated_at, battles, xonstat FROM melee_ratings WHERE rumble_id = ?"
    params: list = [rumble_id]
    if bots is not None:
        sql += f" AND bot_id IN ({', '.join('?' * len(bots))})"
        params += bots
    return {row[0]: MeleeRating(*row[1:]) for row in db.execute(sql, params)}


def ratings_by_name(db: Store, rumble_id: int) -> dict[str, MeleeRating]:
    """The melee ratings of a rumble keyed by bot name (the rankings page)."""
    rows = db.execute(
        "SELECT b.full_name, m.mu, m.sigma, m.rated_at, m.battles, m.xonstat FROM melee_ratings m "
        "JOIN bots b ON b.id = m.bot_id WHERE m.rumble_id = ?",
        (rumble_id,),
    ).fetchall()
    return {row[0]: MeleeRating(*row[1:]) for row in rows}


def bot_page(db: Store, rumble_id: int, name: str, limit: int = 20) -> dict | None:
    """A bot's melee ratings and its latest reassembled battles (newest first), or None if it has
    none: each battle with its time, state, bots, the bot's score and rank, and its rating changes."""
    row = db.execute(
        "SELECT b.id, m.mu, m.sigma, m.rated_at, m.battles, m.xonstat FROM bots b "
        "LEFT JOIN melee_ratings m ON m.bot_id = b.id AND m.rumble_id = ? WHERE b.full_name = ?",
        (rumble_id, name),
    ).fetchone()
    if row is None:
        return None
    battles = db.execute(
        "SELECT m.id, m.last_received, m.state, m.closed_by, m.pairs, e.score, e.rank, e.mu_before, e.mu_after, "
        "e.sigma_before, e.sigma_after, e.xonstat_before, e.xonstat_after, "
        "(SELECT count(*) FROM melee_entries x WHERE x.melee_battle_id = m.id) "
        "FROM melee_entries e JOIN melee_battles m ON m.id = e.melee_battle_id "
        "WHERE e.bot_id = ? AND m.rumble_id = ? ORDER BY m.id DESC LIMIT ?",
        (row[0], rumble_id, limit),
    ).fetchall()
    keys = (
        "id",
        "received_at",
        "state",
        "closed_by",
        "pairs",
        "score",
        "rank",
        "mu_before",
        "mu_after",
        "sigma_before",
        "sigma_after",
        "xonstat_before",
        "xonstat_after",
        "bots",
    )
    rating = MeleeRating(*row[1:]) if row[1] is not None else None
    if rating is None and not battles:
        return None
    return {"rating": rating, "battles": [dict(zip(keys, b)) for b in battles]}


def put_ratings(db: Store, rumble_id: int, rows: Iterable[tuple[int, MeleeRating]]) -> None:
    db.conn.executemany(
        "INSERT OR REPLACE INTO melee_ratings (rumble_id, bot_id, mu, sigma, rated_at, battles, xonstat) "
        "VALUES (?, ?, ?, ?, ?, ?, ?)",
        [(rumble_id, bot, r.mu, r.sigma, r.rated_at, r.battles, r.xonstat) for bot, r in rows],
    )


def newest_battle(db: Store) -> int:
    """The log's newest battle id, of any rumble (0 when empty): what a sweep comes after."""
    return db.execute("SELECT coalesce(max(id), 0) FROM battles").fetchone()[0]


def record_sweep(db: Store, rumble_id: int, swept_at: str, after: int) -> None:
    """Record a sweep of the rumble at ``swept_at``, after battle ``after`` (``newest_battle``).

    The log's newest battle rather than the rumble's (sweeps recorded by older versions hold the rumble's):
    a rebuild replays the sweep before the rumble's next pair either way, and the sweep also closes
    the division copies whose general copy was whole by then (rumble.ingest.melee), which another
    rumble's battles after the rumble's newest one may have made whole."""
    db.execute(
        "INSERT INTO melee_sweeps (rumble_id, after_battle_id, swept_at) VALUES (?, ?, ?)", (rumble_id, after, swept_at)
    )


def sweeps_in_order(db: Store, rumble_id: int, after: int = 0) -> list[tuple[int, int, str]]:
    """The rumble's recorded sweeps after sweep ``after`` as (sweep id, after battle id, time), in order."""
    return db.execute(
        "SELECT id, after_battle_id, swept_at FROM melee_sweeps WHERE rumble_id = ? AND id > ? ORDER BY id",
        (rumble_id, after),
    ).fetchall()


def family_rumbles(db: Store, rumble_id: int) -> list[int]:
    """The melee rumbles of the rumble's family (its general game and divisions, itself included):
    the client plays the priority pairs any of them hands out (protocol.md 7.3, 8)."""
    return [
        row[0]
        for row in db.execute(
            "SELECT g.id FROM rumbles r JOIN rumbles g ON g.family = r.family AND g.melee = 1 WHERE r.id = ? ORDER BY g.id",
            (rumble_id,),
        )
    ]


def general_rumble(db: Store, rumble_id: int) -> int | None:
    """The general melee rumble of the family of a division (mini, micro, nano); None for a general rumble."""
    row = db.execute(
        "SELECT g.id FROM rumbles r JOIN rumbles g ON g.family = r.family AND g.division = 'general' AND g.melee = 1 "
        "WHERE r.id = ? AND r.division <> 'general' ORDER BY g.id LIMIT 1",
        (rumble_id,),
    ).fetchone()
    return row[0] if row else None


def answered_upload(db: Store, rumble_id: int, uploader: str, received_at: str, before_ms: int) -> int | None:
    """The client time of the pair ``uploader`` sent to the rumble at ``received_at`` that opened a
    battle there (the upload a priority pair is handed out with, rumble.ingest.decide), if fought
    within the day before ``before_ms``; None if there is none."""
    row = db.execute(
        "SELECT x.client_time FROM melee_battles m JOIN battles x ON x.id = m.id "
        "WHERE m.rumble_id = ? AND m.uploader = ? AND m.last_time >= ? AND x.received_at = ? AND x.client_time < ? "
        "LIMIT 1",
        (rumble_id, uploader, before_ms - 86_400_000, received_at, before_ms),
    ).fetchone()
    return row[0] if row else None


def open_of_size(db: Store, rumble_id: int, uploader: str, pairs: int) -> list[MeleeBattle]:
    """The open battles of ``uploader`` in the rumble that hold exactly ``pairs`` pairs, oldest first."""
    rows = db.execute(
        f"SELECT {_BATTLE} FROM melee_battles WHERE rumble_id = ? AND state = 'open' AND uploader = ? AND pairs = ? "
        "ORDER BY id",
        (rumble_id, uploader, pairs),
    ).fetchall()
    return [MeleeBattle(*row) for row in rows]


def record_priority_close(db: Store, rumble_id: int, melee_id: int, battle_id: int) -> None:
    """Record that battle ``melee_id`` was closed, while pair ``battle_id`` was applied, on a priority
    pair handed out (rumble.ingest.melee)."""
    db.execute(
        "INSERT INTO melee_priority_closes (melee_battle_id, rumble_id, battle_id) VALUES (?, ?, ?)",
        (melee_id, rumble_id, battle_id),
    )


def priority_closes(db: Store, rumble_id: int, after: int, up_to: int | None) -> set[tuple[int, int]]:
    """(battle, pair) recorded by ``record_priority_close`` for pairs with log ids in (after, up_to] (for a rebuild)."""
    rows = db.execute(
        "SELECT melee_battle_id, battle_id FROM melee_priority_closes WHERE rumble_id = ? AND battle_id > ? "
        "AND battle_id <= ?",
        (rumble_id, after, up_to if up_to is not None else 2**62),
    ).fetchall()
    return {(row[0], row[1]) for row in rows}


# A division's battles live in its own rumble's tables (TEMP copies on a job's connection while it
# replays them aside: ``make_shadow``); its general rumble's are always read from ``main``.
_TWIN = (
    "JOIN battles d ON d.id = m.id JOIN battles g ON g.rumble_id = ? AND g.client_time = d.client_time "
    "AND g.uploader_id = d.uploader_id AND g.first_bot_id = d.first_bot_id AND g.second_bot_id = d.second_bot_id "
    "AND g.first_score = d.first_score AND g.second_score = d.second_score "
    "AND g.first_bullet_damage = d.first_bullet_damage AND g.second_bullet_damage = d.second_bullet_damage "
    "AND g.first_firsts = d.first_firsts AND g.second_firsts = d.second_firsts "
    "JOIN main.melee_pairs gp ON gp.battle_id = g.id JOIN main.melee_battles gm ON gm.id = gp.melee_battle_id"
)


def prioritized_copies(
    db: Store, rumble_id: int, general_id: int, up_to: int, only: int | None = None
) -> list[tuple[int, int]]:
    """(battle, general battle) of the division rumble's open battles (or of battle ``only``, if
    open) whose first pair was also sent to the general rumble ``general_id`` (the same upload but
    its game) into a battle rated there as a whole prioritized one by log id ``up_to``: each copy
    with its general copy, oldest first."""
    where = "" if only is None else "AND m.id = ? "
    return db.execute(
        f"SELECT m.id, gm.id FROM melee_battles m {_TWIN} "
        "WHERE m.rumble_id = ? AND m.state = 'open' AND gm.state = 'rated' AND gm.closed_by = 'prioritized' "
        f"AND gm.closed_after_battle_id <= ? {where}ORDER BY m.id",
        (general_id, rumble_id, up_to, *(() if only is None else (only,))),
    ).fetchall()


def general_copy(db: Store, melee_id: int) -> tuple[dict[int, Figures], list[frozenset[int]]]:
    """A general rumble's battle: its bots' figures, and its pairs (late ones left out) in log order."""
    rows = db.execute(
        "SELECT bot_id, score, bullet_damage, firsts FROM main.melee_entries WHERE melee_battle_id = ?", (melee_id,)
    ).fetchall()
    pairs = db.execute(
        "SELECT b.first_bot_id, b.second_bot_id FROM main.melee_pairs m JOIN battles b ON b.id = m.battle_id "
        "WHERE m.melee_battle_id = ? AND m.late = 0 ORDER BY b.id",
        (melee_id,),
    ).fetchall()
    return {row[0]: tuple(row[1:]) for row in rows}, [frozenset(row) for row in pairs]


_TABLES = ("melee_battles", "melee_entries", "melee_pairs", "melee_ratings")
# Each table's key, and which of its rows belong to rumble ? (given twice: the main table's and the shadow's ids)
_KEYS = {
    "melee_battles": "id",
    "melee_entries": "melee_battle_id, bot_id",
    "melee_pairs": "battle_id",
    "melee_ratings": "rumble_id, bot_id",
}


def make_shadow(db: Store) -> None:
    """Empty TEMP copies of the melee tables, on this connection only: they hide the main tables
    from its unqualified queries, so that ``rumble.ingest.melee`` replays into them without writing the
    database (no write lock); ``swap_shadow`` later moves the differences into the main tables."""
    drop_shadow(db)
    for kind in ("table", "index"):
        for name, sql in db.execute(
            f"SELECT name, sql FROM main.sqlite_master WHERE type = ? AND sql IS NOT NULL AND tbl_name IN ({', '.join('?' * len(_TABLES))})",
            (kind, *_TABLES),
        ).fetchall():
            if kind == "table":
                db.execute(sql.replace("CREATE TABLE ", "CREATE TEMP TABLE ", 1))
            else:
                db.execute(sql.replace(f"CREATE INDEX {name} ", f"CREATE INDEX temp.{name} ", 1))


def drop_shadow(db: Store) -> None:
    for table in _TABLES:
        db.execute(f"DROP TABLE IF EXISTS temp.{table}")


def _rumble_rows(schema: str, table: str) -> str:
    if table in ("melee_battles", "melee_ratings"):
        return f"SELECT * FROM {schema}.{table} WHERE rumble_id = :rumble"
    ids = "SELECT id FROM main.melee_battles WHERE rumble_id = :rumble UNION SELECT id FROM temp.melee_battles"
    column = "melee_battle_id"
    return f"SELECT * FROM {schema}.{table} WHERE {column} IN ({ids})"


def swap_shadow(db: Store, rumble_id: int) -> int:
    """Make the rumble's rows of the main melee tables equal to the shadow's (caller holds the write
    transaction): only the rows that differ are deleted or inserted. The number of rows written."""
    written = 0
    for table in (
        "melee_entries",
        "melee_pairs",
        "melee_battles",
        "melee_ratings",
    ):  # entries and pairs first: they find the rumble's battles
        key = _KEYS[table]
        gone = f"SELECT {key} FROM ({_rumble_rows('main', table)} EXCEPT SELECT * FROM temp.{table})"
        written += db.execute(f"DELETE FROM main.{table} WHERE ({key}) IN ({gone})", {"rumble": rumble_id}).rowcount
        written += db.execute(
            f"INSERT INTO main.{table} SELECT * FROM temp.{table} EXCEPT {_rumble_rows('main', table)}",
            {"rumble": rumble_id},
        ).rowcount
    return written


def melee_rumbles(db: Store) -> list[int]:
    return [row[0] for row in db.execute("SELECT id FROM rumbles WHERE melee = 1 ORDER BY id")]


def clear_rumble(db: Store, rumble_id: int) -> None:
    """Delete a rumble's reassembled battles and melee ratings (before a rebuild writes them again)."""
    ids = "SELECT id FROM melee_battles WHERE rumble_id = ?"
    db.execute(f"DELETE FROM melee_pairs WHERE melee_battle_id IN ({ids})", (rumble_id,))
    db.execute(f"DELETE FROM melee_entries WHERE melee_battle_id IN ({ids})", (rumble_id,))
    db.execute("DELETE FROM melee_battles WHERE rumble_id = ?", (rumble_id,))
    db.execute("DELETE FROM melee_ratings WHERE rumble_id = ?", (rumble_id,))


def battle_counts(db: Store, rumble_id: int) -> dict[str, int]:
    """How many reassembled battles are rated and how many still wait for pairs."""
    rows = dict(
        db.execute(
            "SELECT state, count(*) FROM melee_battles WHERE rumble_id = ? GROUP BY state", (rumble_id,)
        ).fetchall()
    )
    return {"rated": rows.get("rated", 0), "open": rows.get("open", 0)}


def dump(db: Store, rumble_id: int) -> dict[str, list[tuple]]:
    """Every melee row of a rumble, in a fixed order (tests compare online with rebuilt)."""
    ids = "SELECT id FROM melee_battles WHERE rumble_id = ?"
    return {
        "battles": db.execute("SELECT * FROM melee_battles WHERE rumble_id = ? ORDER BY id", (rumble_id,)).fetchall(),
        "entries": db.execute(
            f"SELECT * FROM melee_entries WHERE melee_battle_id IN ({ids}) ORDER BY melee_battle_id, bot_id",
            (rumble_id,),
        ).fetchall(),
        "pairs": db.execute(
            f"SELECT * FROM melee_pairs WHERE melee_battle_id IN ({ids}) ORDER BY battle_id", (rumble_id,)
        ).fetchall(),
        "ratings": db.execute(
            "SELECT * FROM melee_ratings WHERE rumble_id = ? ORDER BY bot_id", (rumble_id,)
        ).fetchall(),
    }
