"""Pairings (a bot's running averages against one opponent, kept from both sides) and the bot
summaries summed from them."""

from __future__ import annotations

from collections.abc import Iterable

from rumble.rankings.scores import Pairing, Summary, Totals
from rumble.store import Store, connection_copy, connection_copy_if_any, drop_connection_copy

_PAIRING = "battles, aps, aps_m2, survival, last_battle"
_TOTALS = "pairings, battles, aps_exact, survival_exact, wins, draws, losses, ci_count, ci_exact"
_EXACT = (2, 3, 8)  # positions of the exact sums in Totals, stored as hex text
_TOTALS_KEY = "totals"  # this module's copy of the summaries (rumble.store.connection_copy): ``_totals_copy``


def _totals_from_row(row: tuple) -> Totals:
    return Totals(*(int(v, 16) if i in _EXACT else v for i, v in enumerate(row)))


def _totals_to_row(t: Totals) -> tuple:
    return tuple(format(v, "x") if i in _EXACT else v for i, v in enumerate(t.astuple()))


def pairing_pair(db: Store, rumble_id: int, a: int, b: int) -> tuple[Pairing | None, Pairing | None]:
    """The pairing (a against b) and (b against a), None where there is none yet."""
    rows = db.execute(  # two probes of the key (``IN (?, ?)`` on both columns made four, two of them a bot with itself)
        f"SELECT bot_id, {_PAIRING} FROM pairings WHERE rumble_id = ?1 AND bot_id = ?2 AND opponent_id = ?3 "
        f"UNION ALL SELECT bot_id, {_PAIRING} FROM pairings WHERE rumble_id = ?1 AND bot_id = ?3 AND opponent_id = ?2",
        (rumble_id, a, b),
    ).fetchall()
    found = {row[0]: Pairing(*row[1:]) for row in rows}
    return found.get(a), found.get(b)


_UPSERT_PAIRING = (
    f"INSERT INTO pairings (rumble_id, bot_id, opponent_id, {_PAIRING}, priority) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) "
    "ON CONFLICT (rumble_id, bot_id, opponent_id) DO UPDATE SET "
    + ", ".join(f"{c} = excluded.{c}" for c in (*_PAIRING.split(", "), "priority"))
)  # an update in place: INSERT OR REPLACE deletes the row and its index entries, then inserts them again


def put_pairing(db: Store, rumble_id: int, bot: int, opponent: int, p: Pairing, priority: float | None) -> None:
    db.execute(
        _UPSERT_PAIRING, (rumble_id, bot, opponent, p.battles, p.aps, p.aps_m2, p.survival, p.last_battle, priority)
    )


def put_pairings(db: Store, rows: Iterable[tuple]) -> None:
    """Bulk insert of (rumble_id, bot, opponent, battles, aps, aps_m2, survival, last_battle, priority)."""
    db.conn.executemany(
        f"INSERT INTO pairings (rumble_id, bot_id, opponent_id, {_PAIRING}, priority) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
        rows,
    )


def opponents_of(db: Store, rumble_id: int, bot: int) -> list[tuple[int, Pairing]]:
    """Every opponent of ``bot`` with the opponent's own pairing against it."""
    rows = db.execute(
        f"SELECT bot_id, {_PAIRING} FROM pairings WHERE rumble_id = ? AND opponent_id = ?", (rumble_id, bot)
    ).fetchall()
    return [(row[0], Pairing(*row[1:])) for row in rows]


def _totals_copy(db: Store, rumble_id: int) -> dict[int, tuple[Totals, str] | None]:
    """This connection's copy of the rumble's summaries read or written so far: bot -> (totals,
    last battle), or None for a bot without one. Every upload reads two bots' exact totals, parsed
    from hex text, and writes them back; the copy saves the read. It is dropped when another
    connection commits (SQLite's ``data_version`` changes) and when this one deletes summaries
    (``clear_totals``, ``clear_rumble``); ``put_totals``, the one other writer of the table, keeps
    it up to date, and a rolled-back transaction clears it with the connection's cache."""
    return connection_copy(db, _TOTALS_KEY).setdefault(rumble_id, {})


def totals_of(db: Store, rumble_id: int, bots) -> dict[int, tuple[Totals, str]]:
    """The exact totals and last battle time of each of ``bots`` that has a summary."""
    copy = _totals_copy(db, rumble_id)
    unknown = [bot for bot in dict.fromkeys(bots) if bot not in copy]
    for start in range(0, len(unknown), 500):  # within SQLite's limit on bound parameters
        chunk = unknown[start : start + 500]
        copy.update(dict.fromkeys(chunk))
        for row in db.execute(
            f"SELECT bot_id, {_TOTALS}, last_battle FROM bot_summaries WHERE rumble_id = ? "
            f"AND bot_id IN ({', '.join('?' * len(chunk))})",
            (rumble_id, *chunk),
        ):
            copy[row[0]] = (_totals_from_row(row[1:10]), row[10])
    return {bot: found for bot in bots if (found := copy[bot]) is not None}


def put_totals(db: Store, rumble_id: int, rows: Iterable[tuple[int, Totals, Summary, str]]) -> None:
    """Write (bot, totals, summary, last battle) rows."""
    rows = list(rows)
    db.conn.executemany(
        f"INSERT INTO bot_summaries (rumble_id, bot_id, {_TOTALS}, aps, aps_ci, survival, pl, pwin, "
        "last_battle) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (rumble_id, bot_id) DO UPDATE SET "
        + ", ".join(
            f"{c} = excluded.{c}" for c in (_TOTALS + ", aps, aps_ci, survival, pl, pwin, last_battle").split(", ")
        ),
        [
            (rumble_id, bot, *_totals_to_row(t), s.aps, s.aps_ci, s.survival, s.pl, s.pwin, last)
            for bot, t, s, last in rows
        ],
    )
    copies = connection_copy_if_any(db, _TOTALS_KEY)
    if copies is not None:
        copies.setdefault(rumble_id, {}).update((bot, (t, last)) for bot, t, _, last in rows)


def rumble_pairings(db: Store, rumble_id: int):
    """Every pairing of a rumble as (bot, opponent, battles, aps, aps_m2, survival, last_battle), streamed."""
    return db.execute(f"SELECT bot_id, opponent_id, {_PAIRING} FROM pairings WHERE rumble_id = ?", (rumble_id,))


def pairing_values(db: Store, rumble_id: int, keys: Iterable[tuple[int, int]]) -> dict[tuple[int, int], tuple]:
    """(battles, aps, aps_m2, survival, last_battle) of each (bot, opponent) in ``keys`` the table has."""
    found = {}
    for a, b in keys:
        row = db.execute(
            f"SELECT {_PAIRING} FROM pairings WHERE rumble_id = ? AND bot_id = ? AND opponent_id = ?", (rumble_id, a, b)
        ).fetchone()
        if row is not None:
            found[a, b] = tuple(row)
    return found


def replace_pairings(db: Store, rumble_id: int, rows: Iterable[tuple[int, int, Pairing, float | None]]) -> None:
    """Write (bot, opponent, pairing, priority) rows over whatever the table has for them."""
    db.conn.executemany(
        f"INSERT OR REPLACE INTO pairings (rumble_id, bot_id, opponent_id, {_PAIRING}, priority) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            (rumble_id, a, b, p.battles, p.aps, p.aps_m2, p.survival, p.last_battle, priority)
            for a, b, p, priority in rows
        ),
    )


def delete_pairings(db: Store, rumble_id: int, keys: Iterable[tuple[int, int]]) -> None:
    db.conn.executemany(
        "DELETE FROM pairings WHERE rumble_id = ? AND bot_id = ? AND opponent_id = ?",
        ((rumble_id, a, b) for a, b in keys),
    )


def clear_totals(db: Store, rumble_id: int) -> None:
    db.execute("DELETE FROM bot_summaries WHERE rumble_id = ?", (rumble_id,))
    drop_connection_copy(db, _TOTALS_KEY)


def clear_rumble(db: Store, rumble_id: int) -> None:
    """Delete a rumble's derived rows (before a rebuild writes them again)."""
    db.execute("DELETE FROM pairings WHERE rumble_id = ?", (rumble_id,))
    db.execute("DELETE FROM bot_summaries WHERE rumble_id = ?", (rumble_id,))
    drop_connection_copy(db, _TOTALS_KEY)


def all_participant_ids(db: Store, rumble_id: int) -> list[int]:
    return [
        row[0]
        for row in db.execute("SELECT bot_id FROM participants WHERE rumble_id = ? ORDER BY bot_id", (rumble_id,))
    ]


def moments_by_name(
    db: Store, rumble_id: int, pairs: list[tuple[str, str]]
) -> dict[tuple[str, str], tuple[int, float]]:
    """(battles, aps_m2) of the pairing of each (bot, opponent) in ``pairs``, by full names, for
    those that exist (the likelihood of superiority needs the shared pairing's variance)."""
    found: dict[tuple[str, str], tuple[int, float]] = {}
    for start in range(0, len(pairs), 400):  # two bound parameters a pair, within SQLite's limit
        chunk = pairs[start : start + 400]
        rows = db.execute(
            f"WITH wanted(a, b) AS (VALUES {', '.join('(?, ?)' for _ in chunk)}) "
            "SELECT wanted.a, wanted.b, x.battles, x.aps_m2 FROM wanted "
            "JOIN bots ba ON ba.full_name = wanted.a JOIN bots bb ON bb.full_name = wanted.b "
            "JOIN pairings x ON x.rumble_id = ? AND x.bot_id = ba.id AND x.opponent_id = bb.id",
            (*(name for pair in chunk for name in pair), rumble_id),
        ).fetchall()
        found.update({(a, b): (battles, m2) for a, b, battles, m2 in rows})
    return found


def ci_counts(db: Store, rumble_id: int) -> dict[str, int]:
    """Each bot's live pairings with 2 battles or more (``ci_count`` of its summary), by full name."""
    rows = db.execute(
        "SELECT b.full_name, s.ci_count FROM bot_summaries s JOIN bots b ON b.id = s.bot_id WHERE s.rumble_id = ?",
        (rumble_id,),
    ).fetchall()
    return {name: count for name, count in rows}


def top_by_aps(db: Store, rumble_id: int, limit: int) -> list[dict]:
    """The ``limit`` active bots of highest APS (ties by name, as the rankings' rank): name, aps,
    aps_ci, pairings, battles and ci_count, for the likelihood-of-superiority matrix."""
    rows = db.execute(
        "SELECT b.full_name, s.aps, s.aps_ci, s.pairings, s.battles, s.ci_count FROM bot_summaries s "
        "JOIN participants p ON p.rumble_id = s.rumble_id AND p.bot_id = s.bot_id AND p.active = 1 "
        "JOIN bots b ON b.id = s.bot_id WHERE s.rumble_id = ? AND s.aps IS NOT NULL "
        "ORDER BY s.aps DESC, b.full_name LIMIT ?",
        (rumble_id, limit),
    ).fetchall()
    keys = ("name", "aps", "aps_ci", "pairings", "battles", "ci_count")
    return [dict(zip(keys, row)) for row in rows]
