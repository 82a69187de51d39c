"""The jar repository and the participants lists (migration 0023): jars, who owns each Java
package, the entries of each general rumble's list, the requests the per-address limits count,
and whether new entries wait for approval.

A jar is a BLOB in the database, bound to its name and version once and for good (``jars.name``
is unique, and nothing here updates or deletes a jar): it is in every backup, and it is written in
the same transaction as the entry that brought it.
"""

from __future__ import annotations

from rumble.store import Store, row_id

JAR_COLUMNS = ("id", "name", "sha256", "size", "kind", "files", "unpacked", "created_at")
ENTRY_COLUMNS = (
    "id",
    "family",
    "bot_class",
    "name",
    "state",
    "entered_by",
    "created_at",
    "listed_at",
    "ended_at",
    "ended_by",
    "reason",
    "sha256",
    "size",
    "owner",
)
_ENTRY_SELECT = (
    "SELECT e.id, e.family, e.bot_class, j.name, e.state, e.entered_by, e.created_at, e.listed_at, e.ended_at, "
    "e.ended_by, e.reason, j.sha256, j.size, c.name FROM entries e JOIN jars j ON j.id = e.jar_id "
    "LEFT JOIN jar_packages p ON p.package = e.package "
    "LEFT JOIN competitors c ON c.id = p.competitor_id "
)
LIVE_STATES = ("pending", "listed")


def jar(db: Store, name: str) -> dict | None:
    """The jar bound to ``name`` ("package.Class version"), without its content, or None."""
    row = db.execute(f"SELECT {', '.join(JAR_COLUMNS)} FROM jars WHERE name = ?", (name,)).fetchone()
    return dict(zip(JAR_COLUMNS, row)) if row else None


def jar_content(db: Store, name: str) -> tuple[str, bytes] | None:
    """(SHA-256, the jar's bytes) of the jar bound to ``name``, or None."""
    row = db.execute("SELECT sha256, content FROM jars WHERE name = ?", (name,)).fetchone()
    return (row[0], bytes(row[1])) if row else None


def add_jar(
    db: Store,
    name: str,
    sha256: str,
    kind: str,
    files: int,
    unpacked: int,
    content: bytes,
    now: str,
    competitor_id: int | None,
    remote_addr: str | None,
) -> int:
    """Bind ``name`` to this jar for good (caller's transaction); its id."""
    return row_id(
        db.execute(
            "INSERT INTO jars (name, sha256, size, kind, files, unpacked, content, created_at, competitor_id, remote_addr) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (name, sha256, len(content), kind, files, unpacked, content, now, competitor_id, remote_addr),
        )
    )


def package_owner(db: Store, package: str) -> tuple[bool, int | None]:
    """(whether someone entered a bot of ``package`` before, the account that owns it: None for the maintainers)."""
    row = db.execute("SELECT competitor_id FROM jar_packages WHERE package = ?", (package,)).fetchone()
    return (False, None) if row is None else (True, row[0])


def claim_package(db: Store, package: str, competitor_id: int | None, now: str) -> None:
    """Make ``competitor_id`` (None: the maintainers) the owner of ``package`` (caller's transaction)."""
    db.execute(
        "INSERT INTO jar_packages (package, competitor_id, created_at) VALUES (?, ?, ?)", (package, competitor_id, now)
    )


def live_entries(db: Store, family: str, bot_class: str) -> dict[str, dict]:
    """The bot's pending and listed entry in the list of ``family``, by state."""
    rows = db.execute(
        _ENTRY_SELECT + "WHERE e.family = ? AND e.bot_class = ? AND e.state IN ('pending', 'listed')",
        (family, bot_class),
    ).fetchall()
    return {row[4]: dict(zip(ENTRY_COLUMNS, row)) for row in rows}


def entry_named(db: Store, family: str, name: str) -> dict | None:
    """The live (pending or listed) entry of ``name`` in the list of ``family``, or None."""
    row = db.execute(
        _ENTRY_SELECT + "WHERE e.family = ? AND j.name = ? AND e.state IN ('pending', 'listed')", (family, name)
    ).fetchone()
    return dict(zip(ENTRY_COLUMNS, row)) if row else None


def add_entry(
    db: Store,
    family: str,
    bot_class: str,
    package: str,
    jar_id: int,
    state: str,
    competitor_id: int | None,
    entered_by: str,
    remote_addr: str | None,
    now: str,
) -> int:
    """A new entry, pending or listed (caller's transaction); its id."""
    return row_id(
        db.execute(
            "INSERT INTO entries (family, bot_class, package, jar_id, state, competitor_id, entered_by, remote_addr, "
            "created_at, listed_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                family,
                bot_class,
                package,
                jar_id,
                state,
                competitor_id,
                entered_by,
                remote_addr,
                now,
                now if state == "listed" else None,
            ),
        )
    )


def end_entry(db: Store, entry_id: int, state: str, now: str, by: str, reason: str | None) -> bool:
    """Take a live entry off the list (or out of the queue): refused, withdrawn or replaced
    (caller's transaction). False if it was no longer live."""
    cursor = db.execute(
        "UPDATE entries SET state = ?, ended_at = ?, ended_by = ?, reason = ? WHERE id = ? AND state IN ('pending', 'listed')",
        (state, now, by, reason, entry_id),
    )
    return cursor.rowcount == 1


def list_entry(db: Store, entry_id: int, now: str) -> bool:
    """List a pending entry (caller's transaction); False if it was not pending."""
    cursor = db.execute(
        "UPDATE entries SET state = 'listed', listed_at = ? WHERE id = ? AND state = 'pending'", (now, entry_id)
    )
    return cursor.rowcount == 1


def entries(db: Store, family: str, states: tuple[str, ...] = LIVE_STATES) -> list[dict]:
    """The entries of the list of ``family`` in ``states``, by name."""
    marks = ", ".join("?" for _ in states)
    rows = db.execute(
        _ENTRY_SELECT + f"WHERE e.family = ? AND e.state IN ({marks}) ORDER BY j.name", (family, *states)
    ).fetchall()
    return [dict(zip(ENTRY_COLUMNS, row)) for row in rows]


def entries_of_jar(db: Store, name: str) -> list[dict]:
    """Every entry, of every list, of the jar bound to ``name``, newest first."""
    rows = db.execute(_ENTRY_SELECT + "WHERE j.name = ? ORDER BY e.id DESC", (name,)).fetchall()
    return [dict(zip(ENTRY_COLUMNS, row)) for row in rows]


def listed_in(db: Store, family: str, names: list[str]) -> set[str]:
    """Which of ``names`` are listed (not pending) in the list of ``family``."""
    if not names:
        return set()
    marks = ", ".join("?" for _ in names)
    rows = db.execute(
        f"SELECT j.name FROM entries e JOIN jars j ON j.id = e.jar_id WHERE e.family = ? AND e.state = 'listed' "
        f"AND j.name IN ({marks})",
        (family, *names),
    ).fetchall()
    return {row[0] for row in rows}


def record_request(
    db: Store,
    at: str,
    remote_addr: str | None,
    action: str,
    competitor_id: int | None,
    outcome: str,
    keep_since: str,
) -> None:
    """Log one request to enter, withdraw or sign up (caller's transaction), and forget those older
    than ``keep_since``."""
    db.execute(
        "INSERT INTO entry_requests (at, remote_addr, action, competitor_id, outcome) VALUES (?, ?, ?, ?, ?)",
        (at, remote_addr, action, competitor_id, outcome[:200]),
    )
    db.execute("DELETE FROM entry_requests WHERE at < ?", (keep_since,))


def requests_since(db: Store, remote_addr: str | None, since: str) -> int:
    """Requests (every action, refused or not) logged from ``remote_addr`` at or after ``since``."""
    return db.execute(
        "SELECT count(*) FROM entry_requests WHERE remote_addr IS ? AND at >= ?", (remote_addr, since)
    ).fetchone()[0]


def account_requests_since(db: Store, competitor_id: int, since: str) -> int:
    """Requests (every action, refused or not) logged for the account at or after ``since``, from any address."""
    return db.execute(
        "SELECT count(*) FROM entry_requests WHERE competitor_id = ? AND at >= ?", (competitor_id, since)
    ).fetchone()[0]


def account_entries_since(db: Store, competitor_id: int, since: str) -> int:
    """Entries the account made at or after ``since`` (every state: a refused one counts too)."""
    return db.execute(
        "SELECT count(*) FROM entries WHERE competitor_id = ? AND created_at >= ?", (competitor_id, since)
    ).fetchone()[0]


def approval_policy(db: Store) -> bool | None:
    """Whether new entries wait for approval, as a maintainer last set it; None if none did."""
    row = db.execute("SELECT value FROM entry_policy WHERE name = 'approval'").fetchone()
    return None if row is None else row[0] == "1"


def set_approval_policy(db: Store, required: bool, by: str, now: str) -> None:
    """Set whether new entries wait for approval (caller's transaction)."""
    db.execute(
        "INSERT INTO entry_policy (name, value, set_by, set_at) VALUES ('approval', ?, ?, ?) "
        "ON CONFLICT (name) DO UPDATE SET value = excluded.value, set_by = excluded.set_by, set_at = excluded.set_at",
        ("1" if required else "0", by, now),
    )


def stuck(db: Store, family: str, rumble_id: int, listed_before: str) -> list[dict]:
    """Entries of the list of ``family`` listed at or before ``listed_before`` whose bot has had no
    battle in the rumble ``rumble_id`` (the list's own rumble): name, when listed, and by whom, longest first."""
    rows = db.execute(
        "SELECT j.name, e.listed_at, e.entered_by FROM entries e JOIN jars j ON j.id = e.jar_id "
        "WHERE e.family = ? AND e.state = 'listed' AND e.listed_at <= ? AND NOT EXISTS ("
        "  SELECT 1 FROM bots b JOIN bot_summaries s ON s.bot_id = b.id AND s.rumble_id = ? "
        "  WHERE b.full_name = j.name AND s.battles > 0"
        ") ORDER BY e.listed_at, j.name",
        (family, listed_before, rumble_id),
    ).fetchall()
    return [{"name": name, "listed_at": at[:19], "entered_by": by} for name, at, by in rows]
