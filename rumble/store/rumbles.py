"""The rumbles table: one row per game, its settings copied from the rumbles file."""

from __future__ import annotations

from rumble.protocol.games import RumbleSettings
from rumble.store import Store, utc_now


def sync_rumbles(db: Store, rumbles: dict[str, RumbleSettings]) -> None:
    """Insert or update a row for every configured rumble (inside the caller's transaction)."""
    for r in rumbles.values():
        db.execute(
            "INSERT INTO rumbles (name, rounds, field, melee, teams, division, family, scoring, created_at) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (name) DO UPDATE SET rounds = excluded.rounds, "
            "field = excluded.field, melee = excluded.melee, teams = excluded.teams, "
            "division = excluded.division, family = excluded.family, scoring = excluded.scoring",
            (r.name, r.rounds, r.field, int(r.melee), int(r.teams), r.division, r.family, r.scoring, utc_now()),
        )
    db._cache.pop("rumble_ids", None)
    db._cache.pop("rumble_scoring", None)


def rumble_id(db: Store, name: str) -> int | None:
    """The id of the rumble called ``name``, or None; cached, since rumbles are never deleted."""
    ids = db._cache.get("rumble_ids")
    if ids is None or name not in ids:
        ids = dict(db.execute("SELECT name, id FROM rumbles").fetchall())
        db._cache["rumble_ids"] = ids
    return ids.get(name)


def known_rumble_id(db: Store, name: str) -> int:
    """The id of the rumble called ``name``, which the caller knows to exist (a configured rumble is
    recorded at start-up); LookupError if it does not."""
    found = rumble_id(db, name)
    if found is None:
        raise LookupError(f"there is no rumble called {name!r}")
    return found


def by_survival(db: Store, rumble_id: int) -> bool:
    """True if the rumble's battle percentages come from rounds won (scoring = "survival"); cached."""
    found = db._cache.get("rumble_scoring")
    if found is None or rumble_id not in found:
        found = dict(db.execute("SELECT id, scoring = 'survival' FROM rumbles").fetchall())
        db._cache["rumble_scoring"] = found
    return bool(found.get(rumble_id))


def rumble_rows(db: Store) -> list[dict]:
    """Every rumble with its participant and battle counts and the time of its last battle.

    Fast at any log size: the last battle is the one with the highest id (receive times never go
    backwards along the log), and the battle counts come from ``battle_counts``.
    """
    rows = db.execute(
        "SELECT r.id, r.name, r.rounds, r.field, r.melee, r.teams, r.division, r.family, "
        "(SELECT count(*) FROM participants p WHERE p.rumble_id = r.id AND p.active) AS participants, "
        "(SELECT received_at FROM battles b WHERE b.id = (SELECT max(id) FROM battles WHERE rumble_id = r.id)) AS last_battle "
        "FROM rumbles r ORDER BY r.family, r.division = 'general' DESC, r.name"
    ).fetchall()
    counts = battle_counts(db)
    keys = ("id", "name", "rounds", "field", "melee", "teams", "division", "family", "participants", "last_battle")
    out = []
    for row in rows:
        rumble = dict(zip(keys, row))
        out.append({**rumble, "battles": counts.get(rumble["id"], 0)})
    return out


def battle_counts(db: Store) -> dict[int, int]:
    """Each rumble's battles in state 'ok', counted once per connection and then only from the
    battles added since (an index lookup), as long as the rumble's generation is unchanged.

    A change of an old battle's state (flagging, removing) must come with a generation bump (a
    rebuild): that is what makes the derived tables follow it too, and here it forces a recount.
    """
    epoch = db.execute("PRAGMA user_version").fetchone()[0]  # bumped by a restore (rumble.store.backup)
    cache: dict[int, tuple[int, int, int]] = db._cache.setdefault(
        "battle_counts", {}
    )  # id -> (last id, generation, count)
    if db._cache.get("battle_counts_epoch") != epoch:
        cache.clear()
        db._cache["battle_counts_epoch"] = epoch
    counts = {}
    for rid, generation, last in db.execute(
        "SELECT r.id, r.generation, (SELECT coalesce(max(id), 0) FROM battles WHERE rumble_id = r.id) FROM rumbles r"
    ).fetchall():
        seen = cache.get(rid)
        if seen is not None and seen[1] == generation and seen[0] <= last:
            count = seen[2] + _count_ok(db, rid, seen[0], last)
        else:
            count = _count_ok(db, rid, 0, last)
        cache[rid] = (last, generation, count)
        counts[rid] = count
    return counts


def _count_ok(db: Store, rumble_id: int, after_id: int, up_to_id: int) -> int:
    """The rumble's 'ok' battles with ids in (after_id, up_to_id]: the bound keeps a battle added meanwhile out."""
    if up_to_id <= after_id:
        return 0
    return db.execute(
        "SELECT count(*) FROM battles WHERE rumble_id = ? AND id > ? AND id <= ? AND state = 'ok'",
        (rumble_id, after_id, up_to_id),
    ).fetchone()[0]


def rumbles_with_participants(db: Store) -> list[int]:
    """The ids of the rumbles that have at least one participant."""
    return [row[0] for row in db.execute("SELECT DISTINCT rumble_id FROM participants ORDER BY rumble_id")]
