"""Bots (one row per "package.Class version") and their membership of each rumble."""

from __future__ import annotations

from rumble.protocol.names import split_name
from rumble.store import Store, note_log_write, row_id, waiting


def bot_id(db: Store, name: str, now: str, origin: str | None = None) -> int:
    """The id of bot ``name``, created if new (inside the caller's transaction) and then recorded
    as first named by the address ``origin`` (an upload's; see ``new_bots_since``)."""
    ids = db._cache.setdefault("bot_ids", {})
    found = ids.get(name)
    if found is not None:
        return found
    row = db.execute("SELECT id FROM bots WHERE full_name = ?", (name,)).fetchone()
    if row is None:
        package, class_name, version = split_name(name)
        cursor = db.execute(
            "INSERT INTO bots (full_name, package, class_name, version, created_at) VALUES (?, ?, ?, ?, ?)",
            (name, package, class_name, version, now),
        )
        found = cursor.lastrowid
        db.execute("INSERT INTO bot_origins (bot_id, remote_addr, created_at) VALUES (?, ?, ?)", (found, origin, now))
    else:
        found = row[0]
    ids[name] = found
    return found


def find_bot(db: Store, name: str) -> int | None:
    row = db.execute("SELECT id FROM bots WHERE full_name = ?", (name,)).fetchone()
    return row[0] if row else None


def find_bot_in_write(db: Store, name: str) -> int | None:
    """``find_bot`` inside a write transaction, from the ids ``bot_id`` remembers when it can: a
    bot's row is never deleted, and ``store.write`` forgets them after a rollback or a restore."""
    found = db._cache.get("bot_ids", {}).get(name)
    return found if found is not None else find_bot(db, name)


def new_bots_since(db: Store, remote_addr: str | None, since: str) -> int:
    """The bots first named by uploads from ``remote_addr`` at or after ``since`` (migration 0013)."""
    sql = "SELECT count(*) FROM bot_origins WHERE remote_addr IS ? AND created_at >= ?"
    return db.execute(sql, (remote_addr, since)).fetchone()[0]


def strangers_joined_since(db: Store, rumble_id: int, since: str) -> int:
    """Participants that uploaders not established brought into the rumble at or after ``since``
    (one range of stranger_joins' key, migration 0021)."""
    sql = "SELECT count(*) FROM stranger_joins WHERE rumble_id = ? AND joined_at >= ?"
    return db.execute(sql, (rumble_id, since)).fetchone()[0]


def record_stranger_join(db: Store, rumble_id: int, bot: int, at: str, forget_before: str) -> None:
    """A stranger's battle brought ``bot`` into the rumble at ``at``; joins before ``forget_before``
    (older than the hour the bound counts) are deleted meanwhile, so the table stays small."""
    db.execute("DELETE FROM stranger_joins WHERE rumble_id = ? AND joined_at < ?", (rumble_id, forget_before))
    db.execute(
        "INSERT OR IGNORE INTO stranger_joins (rumble_id, joined_at, bot_id) VALUES (?, ?, ?)", (rumble_id, at, bot)
    )


def joined_between(db: Store, rumble_id: int, since: str, until: str) -> list[tuple[int, str]]:
    """Active participants that joined the rumble at or after ``since`` and before ``until``:
    (bot id, full name), one range of participants_by_first_seen."""
    sql = (
        "SELECT p.bot_id, b.full_name FROM participants p JOIN bots b ON b.id = p.bot_id "
        "WHERE p.rumble_id = ? AND p.first_seen >= ? AND p.first_seen < ? AND p.active = 1 ORDER BY b.full_name"
    )
    return [(bot, name) for bot, name in db.execute(sql, (rumble_id, since, until))]


def participant_count(db: Store, rumble_id: int) -> int:
    """Every participant of a rumble, active or retired: what each worker's field holds."""
    return db.execute("SELECT count(*) FROM participants WHERE rumble_id = ?", (rumble_id,)).fetchone()[0]


def participant_state(db: Store, rumble_id: int, bot: int) -> bool | None:
    """True if the bot is an active participant, False if retired, None if never seen here."""
    row = db.execute("SELECT active FROM participants WHERE rumble_id = ? AND bot_id = ?", (rumble_id, bot)).fetchone()
    return None if row is None else bool(row[0])


def is_participant(db: Store, rumble_id: int, bot: int) -> bool:
    """Whether the bot ever took part in the rumble (active or retired); call inside a write
    transaction. A participant's row is never deleted, so a yes is remembered, like ``bot_id``'s ids."""
    known = db._cache.setdefault("participants", set())
    if (rumble_id, bot) in known:
        return True
    if participant_state(db, rumble_id, bot) is None:
        return False
    known.add((rumble_id, bot))
    return True


def add_participant(db: Store, rumble_id: int, bot: int, now: str) -> None:
    waiting.forget(db)  # the waiting priority battles' active flags (rumble.store.waiting)
    db.execute(
        "INSERT INTO participants (rumble_id, bot_id, active, first_seen) VALUES (?, ?, 1, ?)",
        (rumble_id, bot, now),
    )


def set_active(db: Store, rumble_id: int, bot: int, active: bool, now: str) -> None:
    waiting.forget(db)  # the waiting priority battles' active flags (rumble.store.waiting)
    db.execute(
        "UPDATE participants SET active = ?, retired_at = ? WHERE rumble_id = ? AND bot_id = ?",
        (int(active), None if active else now, rumble_id, bot),
    )


def sync_active(db: Store, rumble_id: int, flags: dict[int, bool], now: str) -> list[tuple[int, bool]]:
    """Set each participant's active flag to ``flags[bot]`` where it differs; the bots changed, with their new flag.

    A rebuild's replay decides who is active: a bot revived by a battle that was since rolled back
    is retired again (its retirement time kept if it had one)."""
    waiting.forget(db)
    current = dict(db.execute("SELECT bot_id, active FROM participants WHERE rumble_id = ?", (rumble_id,)).fetchall())
    changed = [
        (int(active), int(active), now, rumble_id, bot)
        for bot, active in flags.items()
        if bot in current and bool(current[bot]) != active
    ]
    db.conn.executemany(
        "UPDATE participants SET active = ?, retired_at = CASE WHEN ? THEN NULL ELSE coalesce(retired_at, ?) END "
        "WHERE rumble_id = ? AND bot_id = ?",
        changed,
    )
    return [(bot, bool(active)) for active, _, _, _, bot in changed]


def participant_names(db: Store, rumble_id: int, active_only: bool = True) -> dict[str, int]:
    """Names and ids of a rumble's participants."""
    sql = "SELECT b.full_name, b.id FROM participants p JOIN bots b ON b.id = p.bot_id WHERE p.rumble_id = ?"
    if active_only:
        sql += " AND p.active = 1"
    return dict(db.execute(sql, (rumble_id,)).fetchall())


def active_count(db: Store, rumble_id: int) -> int:
    return db.execute("SELECT count(*) FROM participants WHERE rumble_id = ? AND active = 1", (rumble_id,)).fetchone()[
        0
    ]


def record_event(db: Store, rumble_id: int, bot: int, active: bool, now: str, source: str) -> int:
    """Log a retirement (active False) or restoration, placed after the newest battle of the log; its id."""
    note_log_write(db)  # the ratings copies' version moves (rumble.ingest.fields)
    return row_id(
        db.execute(
            "INSERT INTO participant_events (rumble_id, bot_id, active, after_battle_id, happened_at, source) "
            "VALUES (?, ?, ?, (SELECT coalesce(max(id), 0) FROM battles), ?, ?)",
            (rumble_id, bot, int(active), now, source),
        )
    )
