"""Missing pairings: pairs (a, b), a < b, of active participants never played and not held in the
priority queue (migrations/0016_missing_pairings.sql). Kept up to date as bots enter, retire and
meet, so the priority chooser draws them with one index probe however many are missing.

A bot that enters (or comes back) lacks a pair with every active participant: its pairs are
written FILL_BATCH at a time (``fill_pending``), the first in the transaction that brings it and the
rest in the rumble's next write transactions (rumble.ingest.apply calls it with every battle), so
that no one transaction's cost grows with the rumble (migrations/0024_missing_pairings_pending.sql).
Until they are all written, the chooser draws from those written so far."""

from __future__ import annotations

from collections.abc import Iterable

from rumble.store import Store

DRAW_KEYS = 1 << 32  # draw keys lie in [0, DRAW_KEYS)
FILL_BATCH = 128  # opponents of an entering bot whose pairs one transaction writes
_DRAW = "(%s * 2654435761 + %s * 2246822519) %% 4294967296"  # the pair's draw key, as in the migration
_UNPLAYED = (  # ?1 is the rumble's id
    "NOT EXISTS (SELECT 1 FROM pairings x WHERE x.rumble_id = ?1 AND x.bot_id = {a} AND x.opponent_id = {b}) "
    "AND NOT EXISTS (SELECT 1 FROM priority_battles q WHERE q.rumble_id = ?1 AND q.bot_id = {a} AND q.opponent_id = {b})"
)


def add_bot(db: Store, rumble_id: int, bot: int) -> None:
    """Queue the pairs of ``bot`` (just entered or revived) with every active participant it has
    not met, and write the first FILL_BATCH of them (``fill_pending``)."""
    db.execute("INSERT OR REPLACE INTO missing_pending (rumble_id, bot_id, after) VALUES (?, ?, 0)", (rumble_id, bot))
    fill_pending(db, rumble_id)


def fill_pending(db: Store, rumble_id: int) -> int:
    """Write the pairs of the rumble's first pending bot with its next FILL_BATCH active opponents
    (by id); the pairs written. Costs one index probe when nothing is pending."""
    batch = FILL_BATCH
    found = db.execute(
        "SELECT bot_id, after FROM missing_pending WHERE rumble_id = ? ORDER BY rowid LIMIT 1", (rumble_id,)
    ).fetchone()
    if found is None:
        return 0
    bot, after = found
    upto = db.execute(
        "SELECT max(bot_id), count(*) FROM (SELECT bot_id FROM participants WHERE rumble_id = ? AND active = 1 "
        "AND bot_id > ? AND bot_id != ? ORDER BY bot_id LIMIT ?)",
        (rumble_id, after, bot, batch),
    ).fetchone()
    last, opponents = upto
    written = 0
    if opponents:
        low, high = "min(p.bot_id, ?2)", "max(p.bot_id, ?2)"
        written = db.execute(
            "INSERT OR IGNORE INTO missing_pairings (rumble_id, bot_id, opponent_id, draw) "
            f"SELECT ?1, {low}, {high}, {_DRAW % (low, high)} FROM participants p "
            "WHERE p.rumble_id = ?1 AND p.bot_id > ?3 AND p.bot_id <= ?4 AND p.active = 1 AND p.bot_id != ?2 "
            f"AND {_UNPLAYED.format(a=low, b=high)}",
            (rumble_id, bot, after, last),
        ).rowcount
    if opponents < batch:  # its last opponents: done
        db.execute("DELETE FROM missing_pending WHERE rumble_id = ? AND bot_id = ?", (rumble_id, bot))
    else:
        db.execute("UPDATE missing_pending SET after = ? WHERE rumble_id = ? AND bot_id = ?", (last, rumble_id, bot))
    return written


def pending(db: Store, rumble_id: int) -> list[int]:
    """The bots of the rumble whose pairs are not all written yet, in the order they are written."""
    return [
        bot
        for (bot,) in db.execute("SELECT bot_id FROM missing_pending WHERE rumble_id = ? ORDER BY rowid", (rumble_id,))
    ]


def drop_bot(db: Store, rumble_id: int, bot: int) -> None:
    """Forget every pair of ``bot`` (retired), written or still to be."""
    db.execute("DELETE FROM missing_pending WHERE rumble_id = ? AND bot_id = ?", (rumble_id, bot))
    db.execute(
        "DELETE FROM missing_pairings WHERE rumble_id = ? AND (bot_id = ? OR opponent_id = ?)", (rumble_id, bot, bot)
    )


def drop_pairs(db: Store, rumble_id: int, pairs: Iterable[tuple[int, int]]) -> None:
    """Forget pairs (a, b), a < b: played now, or queued as priority battles."""
    db.conn.executemany(
        "DELETE FROM missing_pairings WHERE rumble_id = ? AND bot_id = ? AND opponent_id = ?",
        ((rumble_id, a, b) for a, b in pairs),
    )


def restore_pairs(db: Store, rumble_id: int, pairs: Iterable[tuple[int, int]]) -> None:
    """Add back pairs (a, b), a < b, no longer held in the queue, where both bots are active and
    still have not met."""
    db.conn.executemany(
        "INSERT OR IGNORE INTO missing_pairings (rumble_id, bot_id, opponent_id, draw) "
        f"SELECT ?1, ?2, ?3, {_DRAW % ('?2', '?3')} WHERE "
        "(SELECT count(*) FROM participants WHERE rumble_id = ?1 AND bot_id IN (?2, ?3) AND active = 1) = 2 "
        f"AND {_UNPLAYED.format(a='?2', b='?3')}",
        ((rumble_id, a, b) for a, b in pairs),
    )


def follow(
    db: Store,
    rumble_id: int,
    played: Iterable[tuple[int, int]],
    unplayed: Iterable[tuple[int, int]],
    flags: Iterable[tuple[int, bool]],
) -> None:
    """Follow a rewrite of the rumble's pairings and active flags (a maintenance swap), once both
    are written: pairs (either order) that now have a pairing, pairs whose pairing was deleted, and
    bots whose flag changed, with the new flag. Costs what changed, not the whole rumble."""
    drop_pairs(db, rumble_id, sorted({(min(a, b), max(a, b)) for a, b in played}))
    restore_pairs(db, rumble_id, sorted({(min(a, b), max(a, b)) for a, b in unplayed}))
    for bot, active in flags:
        if active:
            add_bot(db, rumble_id, bot)
        else:
            drop_bot(db, rumble_id, bot)


def refill(db: Store, rumble_id: int) -> int:
    """Recompute the rumble's missing pairings from its participants, pairings and queue (after a
    rebuild or a maintenance job rewrote them), all at once; the number of pairs."""
    db.execute("DELETE FROM missing_pairings WHERE rumble_id = ?", (rumble_id,))
    db.execute("DELETE FROM missing_pending WHERE rumble_id = ?", (rumble_id,))
    return db.execute(
        "INSERT INTO missing_pairings (rumble_id, bot_id, opponent_id, draw) "
        f"SELECT a.rumble_id, a.bot_id, b.bot_id, {_DRAW % ('a.bot_id', 'b.bot_id')} "
        "FROM participants a JOIN participants b ON b.rumble_id = a.rumble_id AND b.bot_id > a.bot_id "
        f"WHERE a.rumble_id = ?1 AND a.active = 1 AND b.active = 1 AND {_UNPLAYED.format(a='a.bot_id', b='b.bot_id')}",
        (rumble_id,),
    ).rowcount


def draw(db: Store, rumble_id: int, start: int, limit: int) -> list[tuple[int, int]]:
    """Up to ``limit`` pairs in draw-key order from key ``start`` on, going round to key 0 if
    needed. With a random ``start``, a random draw of missing pairings in which each pair is about
    equally likely: a pair's chance to be among the first k is the key space its k predecessors
    span, k/N of it on average for N pairs, the more even the larger k."""
    sql = "SELECT bot_id, opponent_id FROM missing_pairings WHERE rumble_id = ? AND draw {} ? ORDER BY draw LIMIT ?"
    found = db.execute(sql.format(">="), (rumble_id, start, limit)).fetchall()
    if len(found) < limit:
        found += db.execute(sql.format("<"), (rumble_id, start, limit - len(found))).fetchall()
    return [(a, b) for a, b in found]


def pairs_of(db: Store, rumble_id: int) -> set[tuple[int, int]]:
    """Every missing pair of the rumble (for tests and checks)."""
    return {
        (a, b)
        for a, b in db.execute("SELECT bot_id, opponent_id FROM missing_pairings WHERE rumble_id = ?", (rumble_id,))
    }
