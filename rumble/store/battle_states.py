"""Battle states for the maintainers: choosing log rows by who, where, when and which client, and
moving them between 'ok', 'flagged' and 'removed' (the only change the log's triggers allow).

Nothing here deletes a row or touches a derived table: ``rumble.maintenance.integrity`` recomputes those.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from rumble.store import Store, waiting

STATES = ("ok", "flagged", "removed")


@dataclass(frozen=True)
class BattleFilter:
    """Which log rows an action is about; every given criterion must hold (AND).

    Times are the server's receive times, "YYYY-MM-DD HH:MM:SS.mmm" UTC: ``since`` inclusive,
    ``until`` exclusive. ``ids`` picks battles by their log id.
    """

    game: str | None = None
    uploader: str | None = None
    remote_addr: str | None = None
    client: str | None = None
    since: str | None = None
    until: str | None = None
    ids: tuple[int, ...] = ()

    def selects_something_specific(self) -> bool:
        """True if a criterion beyond the game is given: no action may touch a whole rumble by accident."""
        return any(
            v is not None for v in (self.uploader, self.remote_addr, self.client, self.since, self.until)
        ) or bool(self.ids)

    def describe(self) -> dict:
        """The given criteria, for the audit log."""
        found = {k: v for k, v in vars(self).items() if v is not None and k != "ids"}
        if self.ids:
            found["ids"] = list(self.ids)
        return found


def _where(f: BattleFilter, states: Iterable[str]) -> tuple[str, list]:
    """The WHERE clause (over ``battles b`` joined to ``rumbles r``) and its parameters."""
    states = tuple(states)
    clauses = [f"b.state IN ({', '.join('?' * len(states))})"]
    params: list[str | int] = list(states)
    for compared, value in (
        ("r.name = ?", f.game),
        ("b.uploader_id = (SELECT id FROM uploaders WHERE name = ?)", f.uploader),
        ("b.address_id = (SELECT id FROM uploader_addresses WHERE remote_addr = ?)", f.remote_addr),
        ("b.setup_id IN (SELECT id FROM battle_setups WHERE client = ?)", f.client),
    ):
        if value is not None:
            clauses.append(compared)
            params.append(value)
    if f.since is not None:
        clauses.append("b.received_at >= ?")
        params.append(f.since)
    if f.until is not None:
        clauses.append("b.received_at < ?")
        params.append(f.until)
    if f.ids:
        clauses.append(f"b.id IN ({', '.join('?' * len(f.ids))})")
        params += list(f.ids)
    return " AND ".join(clauses), params


def count_matching(db: Store, f: BattleFilter, states: Iterable[str], max_id: int | None = None) -> dict[str, int]:
    """How many battles in ``states`` match ``f`` (with ids up to ``max_id``), per rumble name (only rumbles with some)."""
    where, params = _where(f, states)
    if max_id is not None:
        where, params = where + " AND b.id <= ?", [*params, max_id]
    rows = db.execute(
        f"SELECT r.name, count(*) FROM battles b JOIN rumbles r ON r.id = b.rumble_id WHERE {where} GROUP BY r.name ORDER BY r.name",
        params,
    ).fetchall()
    return dict(rows)


def set_state(db: Store, f: BattleFilter, states: Iterable[str], new_state: str) -> dict[str, int]:
    """Move the battles in ``states`` matching ``f`` to ``new_state``; how many moved, per rumble name."""
    waiting.forget(db)  # which battles count, for the waiting pairs' sole uploaders (rumble.store.waiting)
    if new_state not in STATES:
        raise ValueError(f"no battle state {new_state!r}")
    where, params = _where(f, states)
    rows = db.execute(
        f"UPDATE battles SET state = ? WHERE id IN (SELECT b.id FROM battles b JOIN rumbles r ON r.id = b.rumble_id WHERE {where}) "
        "RETURNING (SELECT name FROM rumbles WHERE id = battles.rumble_id)",
        [new_state, *params],
    ).fetchall()
    moved: dict[str, int] = {}
    for (name,) in rows:
        moved[name] = moved.get(name, 0) + 1
    return dict(sorted(moved.items()))


def matching_ids(db: Store, f: BattleFilter, states: Iterable[str], max_id: int) -> dict[str, list[int]]:
    """The ids of the battles in ``states`` matching ``f`` with ids up to ``max_id``, per rumble name, in log order."""
    where, params = _where(f, states)
    found: dict[str, list[int]] = {}
    for name, battle_id in db.execute(
        f"SELECT r.name, b.id FROM battles b JOIN rumbles r ON r.id = b.rumble_id WHERE {where} AND b.id <= ? ORDER BY r.name, b.id",
        [*params, max_id],
    ):
        found.setdefault(name, []).append(battle_id)
    return found


def set_state_of(db: Store, ids: Iterable[int], states: Iterable[str], new_state: str) -> int:
    """Move the battles ``ids`` that are in ``states`` to ``new_state``; how many moved."""
    waiting.forget(db)  # which battles count, for the waiting pairs' sole uploaders (rumble.store.waiting)
    if new_state not in STATES:
        raise ValueError(f"no battle state {new_state!r}")
    states = tuple(states)
    before = db.conn.total_changes
    db.conn.executemany(
        f"UPDATE battles SET state = ? WHERE id = ? AND state IN ({', '.join('?' * len(states))})",
        ((new_state, battle_id, *states) for battle_id in ids),
    )
    return db.conn.total_changes - before


def set_battle_state(db: Store, battle_id: int, new_state: str) -> None:
    """Set one battle's state (an upload found implausible is logged, then flagged)."""
    waiting.forget(db)  # which battles count, for the waiting pairs' sole uploaders (rumble.store.waiting)
    db.execute("UPDATE battles SET state = ? WHERE id = ?", (new_state, battle_id))


def rumble_rounds(db: Store, name: str) -> int:
    """The rounds of the rumble called ``name`` as recorded in the database (LookupError if none:
    callers name rumbles that have battles in the log)."""
    row = db.execute("SELECT rounds FROM rumbles WHERE name = ?", (name,)).fetchone()
    if row is None:
        raise LookupError(f"there is no rumble called {name!r}")
    return row[0]


BATTLE_COLUMNS = (
    "id",
    "game",
    "uploader",
    "remote_addr",
    "client",
    "received_at",
    "first",
    "first_score",
    "first_firsts",
    "second",
    "second_score",
    "second_firsts",
    "rounds",
    "state",
    "reason",
)


def battles_in_state(db: Store, state: str, limit: int = 200) -> list[dict]:
    """The newest ``limit`` battles in ``state`` with names, and the plausibility reason if any."""
    rows = db.execute(
        "SELECT b.id, r.name, n.name, d.remote_addr, u.client, b.received_at, f.full_name, b.first_score, b.first_firsts, "
        "s.full_name, b.second_score, b.second_firsts, b.rounds, b.state, "
        "(SELECT reason FROM battle_flags WHERE battle_id = b.id) "
        "FROM battles b JOIN rumbles r ON r.id = b.rumble_id JOIN battle_setups u ON u.id = b.setup_id "
        "JOIN uploaders n ON n.id = b.uploader_id JOIN bots f ON f.id = b.first_bot_id "
        "JOIN bots s ON s.id = b.second_bot_id "
        "LEFT JOIN uploader_addresses d ON d.id = b.address_id WHERE b.state = ? ORDER BY b.id DESC LIMIT ?",
        (state, limit),
    ).fetchall()
    return [dict(zip(BATTLE_COLUMNS, row)) for row in rows]


def record_flag_reason(db: Store, battle_id: int, reason: str, now: str) -> None:
    """Why the server flagged a battle on arrival (the plausibility check's words)."""
    db.execute(
        "INSERT OR IGNORE INTO battle_flags (battle_id, reason, flagged_at) VALUES (?, ?, ?)", (battle_id, reason, now)
    )


def logged_battles(db: Store, game: str) -> int:
    """The rumble's battles in the log, in any state (0 for an unknown rumble)."""
    return db.execute(
        "SELECT count(*) FROM battles b JOIN rumbles r ON r.id = b.rumble_id WHERE r.name = ?", (game,)
    ).fetchone()[0]
