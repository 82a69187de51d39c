"""Uploaders' standing (migration 0018): maintainers' vouches and revocations, each rumble's computed
standings (rumble/rankings/uploader_trust.py), and the counts of refused RemoveOldParticipant requests."""

from __future__ import annotations

from rumble.store import Store

STANDING_COLUMNS = ("party", "established", "how", "battles_shared", "pairings_shared", "p", "why", "computed_at")


def set_word(db: Store, party: str, standing: str, maintainer: str, at: str, note: str = "") -> None:
    """A maintainer vouches for (``vouched``) or revokes (``revoked``) a party; the newest word stands
    (caller's write transaction)."""
    db.execute(
        "INSERT INTO uploader_vouches (party, standing, maintainer, at, note) VALUES (?, ?, ?, ?, ?) "
        "ON CONFLICT (party) DO UPDATE SET standing = excluded.standing, maintainer = excluded.maintainer, "
        "at = excluded.at, note = excluded.note",
        (party, standing, maintainer, at, note[:300]),
    )


def words(db: Store) -> list[dict]:
    """Every party a maintainer vouched for or revoked, by party."""
    rows = db.execute("SELECT party, standing, maintainer, at, note FROM uploader_vouches ORDER BY party").fetchall()
    return [dict(zip(("party", "standing", "maintainer", "at", "note"), row)) for row in rows]


def word(db: Store, party: str) -> str | None:
    """'vouched', 'revoked', or None: what a maintainer last said of ``party``."""
    row = db.execute("SELECT standing FROM uploader_vouches WHERE party = ?", (party,)).fetchone()
    return row[0] if row else None


def standing_of(db: Store, rumble_id: int, party: str) -> tuple[bool, str]:
    """(established, why) for ``party`` in the rumble: a maintainer's word first, then the standing
    the hourly run computed (two seeks)."""
    said = word(db, party)
    if said is not None:
        return said == "vouched", f"{said} by a maintainer"
    found = standing(db, rumble_id, party)
    if found is None:
        return False, "not yet assessed"
    return found["established"], found["why"]


def any_vouched(db: Store) -> bool:
    """Whether a maintainer vouched for any party (a ladder with an established uploader)."""
    return db.execute("SELECT 1 FROM uploader_vouches WHERE standing = 'vouched' LIMIT 1").fetchone() is not None


def first_vouch(db: Store) -> str | None:
    """When the oldest standing vouch was given: from then on the ladder has an established uploader."""
    return db.execute("SELECT min(at) FROM uploader_vouches WHERE standing = 'vouched'").fetchone()[0]


def stranger_battles(db: Store, rumble_id: int, bot: int, party: str, day: str) -> int:
    """The battles of ``bot`` from ``party`` counted on ``day`` (one seek)."""
    row = db.execute(
        "SELECT battles FROM stranger_battles WHERE rumble_id = ? AND bot_id = ? AND party = ? AND day = ?",
        (rumble_id, bot, party, day),
    ).fetchone()
    return row[0] if row else 0


def add_stranger_battle(db: Store, rumble_id: int, bots: tuple[int, int], party: str, day: str) -> None:
    """Count one battle of both ``bots`` from ``party`` on ``day``, dropping earlier days' counts of
    those bots (caller's write transaction)."""
    for bot in set(bots):
        db.execute(
            "DELETE FROM stranger_battles WHERE rumble_id = ? AND bot_id = ? AND party = ? AND day < ?",
            (rumble_id, bot, party, day),
        )
        db.execute(
            "INSERT INTO stranger_battles (rumble_id, bot_id, party, day, battles) VALUES (?, ?, ?, ?, 1) "
            "ON CONFLICT (rumble_id, bot_id, party, day) DO UPDATE SET battles = battles + 1",
            (rumble_id, bot, party, day),
        )


def put_standings(db: Store, rumble_id: int, rows: list[dict], computed_at: str) -> None:
    """Replace the rumble's standings with ``rows`` (``Standing.as_dict`` plus ``party``; caller's transaction)."""
    db.execute("DELETE FROM uploader_standings WHERE rumble_id = ?", (rumble_id,))
    db.conn.executemany(
        "INSERT INTO uploader_standings (rumble_id, party, established, how, battles_shared, pairings_shared, p, "
        "why, computed_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
        [
            (
                rumble_id,
                row["party"],
                int(row["established"]),
                row["how"],
                row["battles_shared"],
                row["pairings_shared"],
                row["p"],
                row["why"],
                computed_at,
            )
            for row in rows
        ],
    )


def standings(db: Store, rumble_id: int) -> dict[str, dict]:
    """The rumble's computed standings by party."""
    rows = db.execute(
        f"SELECT {', '.join(STANDING_COLUMNS)} FROM uploader_standings WHERE rumble_id = ?", (rumble_id,)
    ).fetchall()
    return {row[0]: dict(zip(STANDING_COLUMNS, row)) | {"established": bool(row[1])} for row in rows}


def standing(db: Store, rumble_id: int, party: str) -> dict | None:
    """One party's computed standing in the rumble (one seek), or None."""
    row = db.execute(
        f"SELECT {', '.join(STANDING_COLUMNS)} FROM uploader_standings WHERE rumble_id = ? AND party = ?",
        (rumble_id, party),
    ).fetchone()
    return dict(zip(STANDING_COLUMNS, row)) | {"established": bool(row[1])} if row else None


def add_refusals(db: Store, counts: dict[tuple[str, str, str], int]) -> None:
    """Add counts of refused requests, keyed (day, game, reason) (caller's write transaction)."""
    db.conn.executemany(
        "INSERT INTO removal_refusals (day, game, reason, requests) VALUES (?, ?, ?, ?) "
        "ON CONFLICT (day, game, reason) DO UPDATE SET requests = requests + excluded.requests",
        [(day, game[:100], reason, n) for (day, game, reason), n in counts.items()],
    )


def refusals(db: Store, since_day: str) -> list[dict]:
    """Refused requests per day, rumble and reason from ``since_day`` on, newest day first."""
    rows = db.execute(
        "SELECT day, game, reason, requests FROM removal_refusals WHERE day >= ? ORDER BY day DESC, game, reason",
        (since_day,),
    ).fetchall()
    return [dict(zip(("day", "game", "reason", "requests"), row)) for row in rows]
