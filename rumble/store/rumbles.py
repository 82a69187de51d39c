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


def by_survival(db: Store, rumble_id: int) -> bool:
    """True if the rumble's battle percentages come from rounds won (scoring = "survival"); cached."""
    found = db._cache.get("rumble_scoring")
    if found is None or rumble_id not in found:
        found = dict(db.execute("SELECT id, scoring = 'survival' FROM rumbles").fetchall())
        db._cache["rumble_scoring"] = found
    return bool(found.get(rumble_id))


def rumble_rows(db: Store) -> list[dict]:
    """Every rumble with its participant and battle counts and the time of its last battle."""
    rows = db.execute(
        "SELECT r.id, r.name, r.rounds, r.field, r.melee, r.teams, r.division, r.family, "
        "(SELECT count(*) FROM participants p WHERE p.rumble_id = r.id AND p.active) AS participants, "
        "(SELECT count(*) FROM battles b WHERE b.rumble_id = r.id AND b.state = 'ok') AS battles, "
        "(SELECT max(received_at) FROM battles b WHERE b.rumble_id = r.id) AS last_battle "
        "FROM rumbles r ORDER BY r.family, r.division = 'general' DESC, r.name"
    ).fetchall()
    keys = ("id", "name", "rounds", "field", "melee", "teams", "division", "family", "participants", "battles", "last_battle")
    return [dict(zip(keys, row)) for row in rows]


def rumbles_with_participants(db: Store) -> list[int]:
    """The ids of the rumbles that have at least one participant."""
    return [row[0] for row in db.execute("SELECT DISTINCT rumble_id FROM participants ORDER BY rumble_id")]
