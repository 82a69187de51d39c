"""The battle log: append-only, one row per accepted upload."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from rumble.protocol.battle import Battle
from rumble.store import Store, ms_time, note_log_write, time_ms, waiting

LOG_COLUMNS = (
    "id",
    "game",
    "version",
    "client",
    "teams",
    "melee",
    "rounds",
    "field",
    "uploader",
    "client_time",
    "first_name",
    "first_score",
    "first_bullet_damage",
    "first_firsts",
    "second_name",
    "second_score",
    "second_bullet_damage",
    "second_firsts",
    "received_at",
    "remote_addr",
    "state",
)


# A result equal to one logged (a client's retry: protocol.md 7.4), found through battles_by_pairing
# (migrations/0030_battle_identity_through_the_pairing_index.sql).
_SAME_RESULT = (
    "SELECT 1 FROM battles WHERE rumble_id = ? AND first_bot_id = ? AND second_bot_id = ? AND client_time = ? "
    "AND uploader_id = ? AND first_score = ? AND second_score = ? AND first_bullet_damage = ? "
    "AND second_bullet_damage = ? AND first_firsts = ? AND second_firsts = ? LIMIT 1"
)


def append_battle(db: Store, rumble_id: int, first_id: int, second_id: int, battle: Battle) -> int | None:
    """Append ``battle`` to the log and return its id, or None if the same result is already there
    (caller holds the write transaction, so no equal result can be logged between the look and the insert)."""
    first, second = battle.first, battle.second
    uploader = number_of(db, "uploaders", name=battle.uploader)
    identity = (rumble_id, first_id, second_id, battle.time_ms, uploader)
    figures = (first.score, second.score, first.bullet_damage, second.bullet_damage, first.firsts, second.firsts)
    if db.execute(_SAME_RESULT, identity + figures).fetchone() is not None:
        return None
    cursor = db.execute(
        "INSERT INTO battles (rumble_id, setup_id, teams, melee, rounds, uploader_id, client_time, "
        "first_bot_id, first_score, first_bullet_damage, first_firsts, "
        "second_bot_id, second_score, second_bullet_damage, second_firsts, received_ms, address_id, state) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            rumble_id,
            number_of(db, "battle_setups", version=battle.version, client=battle.client, field=battle.field),
            int(battle.teams),
            int(battle.melee),
            battle.rounds,
            uploader,
            battle.time_ms,
            first_id,
            first.score,
            first.bullet_damage,
            first.firsts,
            second_id,
            second.score,
            second.bullet_damage,
            second.firsts,
            time_ms(battle.received_at),
            None if battle.remote_addr is None else number_of(db, "uploader_addresses", remote_addr=battle.remote_addr),
            battle.state,
        ),
    )
    note_log_write(db)  # the ratings copies' version moved (rumble.ingest.fields)
    waiting.battle_stored(db, rumble_id, first_id, second_id)  # its pair's sole uploader (rumble.store.waiting)
    return cursor.lastrowid


def number_of(db: Store, table: str, **key: str) -> int:
    """The number (``id``) the log keeps ``key`` under in ``table``, whose UNIQUE columns ``key``
    names: the setups (migrations/0029_battle_setups.sql), the uploaders' addresses (0028) and the
    uploaders (0032), each made on its first battle, inside the caller's transaction. Rows of these
    tables are never deleted, so the connection keeps the numbers it found (its cache, which a
    rolled-back transaction or a restore clears)."""
    known = db._cache.setdefault(table, {})
    values = tuple(key.values())
    found = known.get(values)
    if found is None:
        where = " AND ".join(f"{column} = ?" for column in key)
        row = db.execute(f"SELECT id FROM {table} WHERE {where}", values).fetchone()
        if row is None:
            marks = ", ".join("?" * len(key))
            row = db.execute(f"INSERT INTO {table} ({', '.join(key)}) VALUES ({marks}) RETURNING id", values).fetchone()
        found = known[values] = row[0]
    return found


def latest_uploader(db: Store, remote_addr: str | None, rumble_id: int, since: str) -> str | None:
    """The uploader of the newest battle in state 'ok' that ``remote_addr`` uploaded to the rumble
    at or after ``since``; None if it uploaded none.

    It walks the address's battles in the rumble back from the newest (``battles_by_address``, in id
    order) and stops at the first received before ``since``: an upload's receive time is stamped
    under the write lock, so along the log's uploads it never goes backwards. So it reads the
    address's battles since then down to its newest accepted one, never its older battles. (A
    battle imported later with an older receive time, ``rumble import``, ends the walk there: the
    address then counts as having uploaded nothing since, until its next upload, the safe side for
    the privilege this decides.)"""
    rows = db.execute(
        "SELECT (SELECT name FROM uploaders WHERE id = uploader_id), received_at, state FROM battles "
        "WHERE address_id = (SELECT id FROM uploader_addresses WHERE remote_addr = ?) AND rumble_id = ? ORDER BY id DESC",
        (remote_addr, rumble_id),
    )
    try:
        for uploader, received_at, state in rows:
            if received_at < since:
                return None
            if state == "ok":
                return uploader
        return None
    finally:
        rows.close()


@dataclass(frozen=True)
class LoggedBattle:
    """What a rebuild needs of one log row."""

    id: int
    first_id: int
    second_id: int
    first_score: int
    second_score: int
    first_firsts: int
    second_firsts: int
    received_ms: int  # the receive time, whole milliseconds since 1970 (battles.received_ms)
    state: str = "ok"

    @property
    def received_at(self) -> str:
        """The receive time as the store's text (what the online path was given)."""
        return ms_time(self.received_ms)


def log_pages(
    db: Store,
    columns: str,
    rumble_id: int,
    after: int = 0,
    up_to: int | None = None,
    states: tuple[str, ...] = ("ok",),
    batch: int = 10_000,
) -> Iterator[list[tuple]]:
    """``columns`` (the first of them ``id``) of the rumble's battles in ``states`` with ids in
    (after, up_to], in log order, as lists of at most ``batch`` rows: each list one index range
    read, the next starting after the last id seen, so a whole log streams in bounded memory."""
    last = after
    marks = ", ".join("?" * len(states))
    bound = up_to if up_to is not None else 1 << 62
    while True:
        rows = db.execute(
            f"SELECT {columns} FROM battles WHERE rumble_id = ? AND id > ? AND id <= ? AND state IN ({marks}) "
            "ORDER BY id LIMIT ?",
            (rumble_id, last, bound, *states, batch),
        ).fetchall()
        if not rows:
            return
        yield rows
        last = rows[-1][0]


_SCORED = "id, first_bot_id, second_bot_id, first_score, second_score, first_firsts, second_firsts, received_ms"


def iter_scored_battles(
    db: Store,
    rumble_id: int,
    batch: int = 10_000,
    after: int = 0,
    up_to: int | None = None,
    states: tuple[str, ...] = ("ok",),
) -> Iterator[LoggedBattle]:
    """The rumble's battles in ``states`` (default 'ok') with ids in (after, up_to], in log order, read in batches."""
    for rows in log_pages(db, _SCORED + ", state", rumble_id, after, up_to, states, batch):
        for row in rows:
            yield LoggedBattle(*row)


def scored_battle_runs(
    db: Store,
    rumble_id: int,
    after: int = 0,
    up_to: int | None = None,
    batch: int = 50_000,
    states: tuple[str, ...] = ("ok",),
) -> Iterator[list[tuple[int, int, int, int, int, int, int, int, int]]]:
    """The rumble's battles in ``states`` with ids in (after, up_to], in log order, as lists of at
    most ``batch`` rows (id, first bot, second bot, first score, second score, first firsts, second
    firsts, receive time in ms since 1970, 1 if its state is 'ok' else 0): what the compiled replay reads
    (rumble.maintenance.rebuild)."""
    return log_pages(db, _SCORED + ", state = 'ok'", rumble_id, after, up_to, states, batch)


def newest_id(db: Store) -> int:
    """The highest battle id of the whole log (0 when it is empty)."""
    return db.execute("SELECT coalesce(max(id), 0) FROM battles").fetchone()[0]


def pairs_after(db: Store, rumble_id: int, after: int) -> list[tuple[int, int]]:
    """(first bot, second bot) of the rumble's battles after log id ``after``, in any state."""
    return db.execute(
        "SELECT first_bot_id, second_bot_id FROM battles WHERE rumble_id = ? AND id > ?", (rumble_id, after)
    ).fetchall()


def count_battles(db: Store, rumble_id: int | None = None) -> int:
    if rumble_id is None:
        return db.execute("SELECT count(*) FROM battles").fetchone()[0]
    return db.execute("SELECT count(*) FROM battles WHERE rumble_id = ?", (rumble_id,)).fetchone()[0]


def log_rows(db: Store, rumble_id: int | None = None) -> Iterator[dict]:
    """The log with names instead of ids, in log order (export, tests)."""
    sql = (
        "SELECT b.id, r.name, u.version, u.client, b.teams, b.melee, b.rounds, u.field, n.name, b.client_time, "
        "f.full_name, b.first_score, b.first_bullet_damage, b.first_firsts, "
        "s.full_name, b.second_score, b.second_bullet_damage, b.second_firsts, b.received_at, d.remote_addr, b.state "
        "FROM battles b JOIN rumbles r ON r.id = b.rumble_id JOIN battle_setups u ON u.id = b.setup_id "
        "JOIN uploaders n ON n.id = b.uploader_id "
        "JOIN bots f ON f.id = b.first_bot_id JOIN bots s ON s.id = b.second_bot_id "
        "LEFT JOIN uploader_addresses d ON d.id = b.address_id"
    )
    params: tuple = ()
    if rumble_id is not None:
        sql += " WHERE b.rumble_id = ?"
        params = (rumble_id,)
    for row in db.execute(sql + " ORDER BY b.id", params):
        yield dict(zip(LOG_COLUMNS, row))
