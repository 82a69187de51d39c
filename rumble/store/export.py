"""Bulk export of one rumble: its rankings, pairings and battle log as rows to stream (CSV or
JSON), and the rumble as an SQLite file of its own that opens as-is in Datasette or ``sqlite3``.

Every export reads one snapshot on a connection of its own (read-only on the server's file), so a
long download neither sees a half-applied upload nor holds the worker's shared connection.

What is left out: the uploaders' network addresses (``battles.address_id``, and the address in a
retirement's ``participant_events.source``), the maintainers' tables and the priority queue's
working state.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
from collections.abc import Iterator
from pathlib import Path

from rumble.store import BUSY_TIMEOUT_MS, Store

# Tables with a rumble_id column that are not copied: the priority queue's and the missing
# pairings' working state, the uploaders' sums (kept per address, which the battles' copy leaves
# out), and anything about maintainers (should a later migration give one a rumble_id).
NOT_EXPORTED = {"priority_battles", "audit_log", "maintainers", "secrets", "uploader_sums", "missing_pending"}
# Columns replaced in the copy: table -> column -> SQL expression over the source row.
REDACTED = {
    "battles": {"address_id": "NULL"},
    "participant_events": {
        "source": "CASE WHEN instr(source, ' from ') > 0 THEN substr(source, 1, instr(source, ' from ') - 1) ELSE source END"
    },
}
PAIRING_COLUMNS = ("bot", "opponent", "opponent_active", "battles", "aps", "survival", "last_battle")
BATTLE_COLUMNS = (
    "id",
    "received_at",
    "client_time",
    "first",
    "first_score",
    "first_bullet_damage",
    "first_firsts",
    "second",
    "second_score",
    "second_bullet_damage",
    "second_firsts",
    "rounds",
    "uploader",
    "client",
    "state",
)


@contextlib.contextmanager
def snapshot(path: str | os.PathLike) -> Iterator[sqlite3.Connection]:
    """A read-only connection to the database at ``path`` inside one read transaction."""
    conn = sqlite3.connect(
        f"{Path(path).resolve().as_uri()}?mode=ro", uri=True, isolation_level=None, timeout=BUSY_TIMEOUT_MS / 1000
    )
    try:
        conn.execute("BEGIN")
        yield conn
    finally:
        conn.close()  # ends the read transaction


def log_version(conn: sqlite3.Connection | Store, rumble_id: int, schema: str = "main") -> tuple:
    """What every export of the rumble depends on, read from indexes only (cheap enough for each
    request): the rumble's row (its settings and rebuild generation), its newest battle, retirement
    event, batch run and melee sweep, the newest day of its rank snapshot, and the file's restore
    count (``PRAGMA user_version``, bumped by each ``rumble restore``). Equal versions, equal exports.
    """
    row = conn.execute(f"SELECT * FROM {schema}.rumbles WHERE id = ?", (rumble_id,)).fetchone()
    newest = conn.execute(
        f"SELECT (SELECT coalesce(max(id), 0) FROM {schema}.battles WHERE rumble_id = :r), "
        f"(SELECT coalesce(max(id), 0) FROM {schema}.participant_events WHERE rumble_id = :r), "
        f"(SELECT coalesce(max(id), 0) FROM {schema}.batch_runs WHERE rumble_id = :r), "
        f"(SELECT coalesce(max(id), 0) FROM {schema}.melee_sweeps WHERE rumble_id = :r), "
        f"(SELECT max(day) FROM {schema}.rank_history WHERE rumble_id = :r)",
        {"r": rumble_id},
    ).fetchone()
    (epoch,) = conn.execute(f"PRAGMA {schema}.user_version").fetchone()
    return (tuple(row or ()), tuple(newest), epoch)


def pairing_rows(conn: sqlite3.Connection, rumble_id: int) -> Iterator[tuple]:
    """Every pairing of the rumble (both sides, retired bots' too), by bot and opponent name."""
    yield from conn.execute(
        "SELECT b.full_name, o.full_name, p.active, x.battles, x.aps, x.survival, substr(x.last_battle, 1, 19) "
        "FROM pairings x JOIN bots b ON b.id = x.bot_id JOIN bots o ON o.id = x.opponent_id "
        "JOIN participants p ON p.rumble_id = x.rumble_id AND p.bot_id = x.opponent_id "
        "WHERE x.rumble_id = ? ORDER BY b.full_name, o.full_name",
        (rumble_id,),
    )


def battle_rows(conn: sqlite3.Connection, rumble_id: int) -> Iterator[tuple]:
    """The rumble's battle log in log order, bots by name (no network addresses)."""
    yield from conn.execute(
        "SELECT x.id, substr(x.received_at, 1, 23), x.client_time, f.full_name, x.first_score, x.first_bullet_damage, "
        "x.first_firsts, s.full_name, x.second_score, x.second_bullet_damage, x.second_firsts, x.rounds, n.name, "
        "u.client, x.state FROM battles x JOIN battle_setups u ON u.id = x.setup_id JOIN uploaders n ON n.id = x.uploader_id "
        "JOIN bots f ON f.id = x.first_bot_id JOIN bots s ON s.id = x.second_bot_id "
        "WHERE x.rumble_id = ? ORDER BY x.id",
        (rumble_id,),
    )


# Tables copied whole or by their own rule: the rumble, its bots, the battles' setups (a few rows,
# which the battles name by number) and the rumble's uploaders (which they name by number too).
WHOLE = ("rumbles", "bots", "battle_setups", "uploaders")


def _exported_tables(conn: sqlite3.Connection) -> list[str]:
    """WHOLE and every table with a rumble_id column not in NOT_EXPORTED, in schema order."""
    names = [
        row[0]
        for row in conn.execute(
            "SELECT name FROM src.sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY rowid"
        )
    ]
    return [n for n in names if n in WHOLE or (n not in NOT_EXPORTED and "rumble_id" in _columns(conn, n))]


def _columns(conn: sqlite3.Connection, table: str) -> list[str]:
    return [row[1] for row in conn.execute(f'PRAGMA src.table_info("{table}")')]  # names from sqlite_master


def _where(table: str) -> str:
    if table == "rumbles":
        return "WHERE id = :rumble"
    if table == "bots":
        return "WHERE id IN (SELECT bot_id FROM src.participants WHERE rumble_id = :rumble)"
    if table == "battle_setups":
        return ""
    if table == "uploaders":
        return "WHERE id IN (SELECT uploader_id FROM src.battles WHERE rumble_id = :rumble)"
    return "WHERE rumble_id = :rumble"


def copy_rumble(path: str | os.PathLike, rumble_id: int, dest: str | os.PathLike) -> tuple[dict[str, int], tuple]:
    """Write the rumble's rows of every exported table, with their schema and indexes, to the new file
    ``dest``, all read in one snapshot of the database at ``path``; rows copied per table, and the
    ``log_version`` of that snapshot.

    The copy is a plain SQLite file in rollback-journal mode (one self-contained file).
    """
    dest = Path(dest)
    dest.unlink(missing_ok=True)
    conn = sqlite3.connect(dest.resolve().as_uri(), uri=True, isolation_level=None, timeout=BUSY_TIMEOUT_MS / 1000)
    try:
        conn.execute("ATTACH DATABASE ? AS src", (f"{Path(path).resolve().as_uri()}?mode=ro",))
        counts = {}
        conn.execute("BEGIN")
        version = log_version(conn, rumble_id, "src")  # the first read of src: the snapshot's own version
        tables = _exported_tables(conn)
        for table in tables:
            conn.execute(
                conn.execute(
                    "SELECT sql FROM src.sqlite_master WHERE type = 'table' AND name = ?", (table,)
                ).fetchone()[0]
            )
            columns = _columns(conn, table)
            select = ", ".join(REDACTED.get(table, {}).get(c, f'"{c}"') for c in columns)
            quoted = ", ".join(f'"{c}"' for c in columns)
            cursor = conn.execute(
                f'INSERT INTO main."{table}" ({quoted}) SELECT {select} FROM src."{table}" {_where(table)}',
                {"rumble": rumble_id},
            )
            counts[table] = cursor.rowcount
        for (sql,) in conn.execute(
            f"SELECT sql FROM src.sqlite_master WHERE type = 'index' AND sql IS NOT NULL AND tbl_name IN ({', '.join('?' * len(tables))})",
            tables,
        ).fetchall():
            conn.execute(sql)
        conn.execute("COMMIT")
        conn.execute("DETACH DATABASE src")
        conn.execute("ANALYZE")
    except BaseException:
        conn.close()
        dest.unlink(missing_ok=True)
        raise
    conn.close()
    return counts, version
