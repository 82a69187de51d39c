"""Ratings rows, and what a server worker reads to keep its in-memory copy of a rumble current."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator

from rumble.ratings.columns import ROWS
from rumble.ratings.online import BotRatings
from rumble.store import Store, note_log_write

COLUMNS = (*ROWS, "xonstat_battles")  # BotRatings' values (the declaration's rows), then its battle count
_SELECT = ", ".join(COLUMNS)


def put_ratings(db: Store, rumble_id: int, rows: Iterable[tuple[int, BotRatings]]) -> None:
    """Write (bot, ratings) rows."""
    db.conn.executemany(
        f"INSERT INTO ratings (rumble_id, bot_id, {_SELECT}) VALUES (?, ?, {', '.join('?' * len(COLUMNS))}) "
        f"ON CONFLICT (rumble_id, bot_id) DO UPDATE SET {', '.join(f'{c} = excluded.{c}' for c in COLUMNS)}",
        [(rumble_id, bot, *r.values, r.xonstat_battles) for bot, r in rows],
    )


def ratings_of(db: Store, rumble_id: int, bots: list[int] | None = None) -> dict[int, BotRatings]:
    """The ratings rows of a rumble (of ``bots`` only, if given)."""
    sql = f"SELECT bot_id, {_SELECT} FROM ratings WHERE rumble_id = ?"
    params: list = [rumble_id]
    if bots is not None:
        sql += f" AND bot_id IN ({', '.join('?' * len(bots))})"
        params += bots
    return {row[0]: BotRatings(tuple(row[1:-1]), row[-1]) for row in db.execute(sql, params)}


def clear_ratings(db: Store, rumble_id: int) -> None:
    db.execute("DELETE FROM ratings WHERE rumble_id = ?", (rumble_id,))


def version(db: Store, rumble_id: int) -> tuple[int, int, int]:
    """What a copy of the rumble must have seen to be current: (last battle id, last event id, generation)."""
    return db.execute(
        "SELECT (SELECT coalesce(max(id), 0) FROM battles WHERE rumble_id = ?), "
        "(SELECT coalesce(max(id), 0) FROM participant_events WHERE rumble_id = ?), "
        "(SELECT generation FROM rumbles WHERE id = ?)",
        (rumble_id, rumble_id, rumble_id),
    ).fetchone()


def generation(db: Store, rumble_id: int) -> int:
    """The rumble's generation: bumped whenever its derived tables are replaced wholesale."""
    return db.execute("SELECT generation FROM rumbles WHERE id = ?", (rumble_id,)).fetchone()[0]


def bump_generation(db: Store, rumble_id: int) -> None:
    note_log_write(db)  # the ratings copies' version moves (rumble.ingest.fields)
    db.execute("UPDATE rumbles SET generation = generation + 1 WHERE id = ?", (rumble_id,))


def record_swap(db: Store, rumble_id: int, generation: int, pairs: list[tuple[int, int]] | None) -> None:
    """Note what a maintenance swap that made ``generation`` rewrote (None: too much to catch up on)."""
    db.execute(
        "INSERT OR REPLACE INTO field_swaps (rumble_id, generation, pairs) VALUES (?, ?, ?)",
        (rumble_id, generation, json.dumps(pairs) if pairs is not None else None),
    )


def swap_after(db: Store, rumble_id: int, generation: int) -> list[tuple[int, int]] | None:
    """The pairings the swap that followed ``generation`` rewrote, if it is the latest and was recorded with them."""
    row = db.execute("SELECT generation, pairs FROM field_swaps WHERE rumble_id = ?", (rumble_id,)).fetchone()
    if row is None or row[0] != generation + 1 or row[1] is None:
        return None
    return [tuple(pair) for pair in json.loads(row[1])]


def battles_since(db: Store, rumble_id: int, battle_id: int) -> list[tuple[int, int, int]]:
    """(id, first bot, second bot) of the rumble's battles after ``battle_id``."""
    return db.execute(
        "SELECT id, first_bot_id, second_bot_id FROM battles WHERE rumble_id = ? AND id > ? ORDER BY id",
        (rumble_id, battle_id),
    ).fetchall()


def bots_rated_by_melee_battles(db: Store, rumble_id: int, battle_ids: list[int]) -> list[int]:
    """The bots of the melee battles closed while one of ``battle_ids`` was applied (their ratings
    changed with that upload, rumble/ingest/melee.py)."""
    if not battle_ids:
        return []
    return [
        row[0]
        for row in db.execute(
            "SELECT DISTINCT e.bot_id FROM melee_battles m JOIN melee_entries e ON e.melee_battle_id = m.id "
            f"WHERE m.rumble_id = ? AND m.closed_after_battle_id IN ({', '.join('?' * len(battle_ids))})",
            (rumble_id, *battle_ids),
        )
    ]


def bots_with_events_since(db: Store, rumble_id: int, event_id: int) -> list[int]:
    """The bots retired or restored in the rumble after event ``event_id``."""
    return [
        row[0]
        for row in db.execute(
            "SELECT DISTINCT bot_id FROM participant_events WHERE rumble_id = ? AND id > ?", (rumble_id, event_id)
        )
    ]


def participants(db: Store, rumble_id: int, bots: list[int] | None = None) -> list[tuple[int, bool]]:
    sql = "SELECT bot_id, active FROM participants WHERE rumble_id = ?"
    params: list = [rumble_id]
    if bots is not None:
        sql += f" AND bot_id IN ({', '.join('?' * len(bots))})"
        params += bots
    return [(bot, bool(active)) for bot, active in db.execute(sql, params)]


def pairing_aps(db: Store, rumble_id: int, pairs: list[tuple[int, int]] | None = None) -> list[tuple[int, int, float]]:
    """(bot, opponent, APS) of the rumble's pairings (of the given pairs, both ways, if given: in one
    query, each pairing found through the primary key in key order, about five times as fast as a
    query a pair; each key packed into one integer, bot * 2^32 + opponent, which SQLite unpacks
    faster than a JSON pair)."""
    if pairs is None:
        return db.execute("SELECT bot_id, opponent_id, aps FROM pairings WHERE rumble_id = ?", (rumble_id,)).fetchall()
    keys = json.dumps(sorted({key for a, b in pairs for key in (a << 32 | b, b << 32 | a)}))
    return db.execute(  # CROSS JOIN: the list first, each of its pairings looked up (not the rumble scanned)
        "SELECT p.bot_id, p.opponent_id, p.aps FROM json_each(?) j CROSS JOIN pairings p "
        "ON p.rumble_id = ? AND p.bot_id = j.value >> 32 AND p.opponent_id = j.value & 4294967295",
        (keys, rumble_id),
    ).fetchall()


def pairing_aps_chunks(db: Store, rumble_id: int, size: int = 50_000) -> Iterator[list[tuple[int, int, float]]]:
    """(bot, opponent, APS) of every pairing of the rumble, ``size`` rows at a time (a 1,200-bot
    rumble has 1.44 M: read at once, their Python tuples took some 280 MB of a worker's peak)."""
    cursor = db.execute("SELECT bot_id, opponent_id, aps FROM pairings WHERE rumble_id = ?", (rumble_id,))
    while rows := cursor.fetchmany(size):
        yield rows


def events_in_order(db: Store, rumble_id: int, after: int = 0) -> list[tuple[int, int, bool, int]]:
    """(event id, bot, active, after battle id) of the rumble's retirements and restorations after
    event ``after``, in order."""
    return [
        (e, bot, bool(active), after_battle)
        for e, bot, active, after_battle in db.execute(
            "SELECT id, bot_id, active, after_battle_id FROM participant_events WHERE rumble_id = ? AND id > ? ORDER BY id",
            (rumble_id, after),
        )
    ]
