"""Confirmed pairings in the priority queue: a pairing whose accepted battles
all come from one uploader is *unconfirmed*, and a waiting priority battle of such a pairing is
handed to another uploader first.

One small hook in ``rumble.ingest.apply.next_priority_battle``: before the queue's oldest waiting pair
is handed out, ``pop_for_uploader`` looks at the waiting pairs (at most ``SCAN`` of them, oldest
first) and hands this uploader the first one that another uploader alone has played; failing
that, the first one that is not its own unconfirmed pairing. It returns None when neither exists,
and the queue then goes on as before. Unconfirmed pairings reach the queue as they did before
(few battles, then uncertainty: rumble/ingest/priority.py); nothing here changes how batches are chosen.
"""

from __future__ import annotations

from rumble.store import Store, priority_queue, waiting
from rumble.store.uploader_battles import pair_sole_uploaders

SCAN = 64  # waiting entries of active bots looked at per hand-out (the queue holds PRIORITY_BATCH, 8 by default)


def hand_out(db: Store, rumble_id: int, uploader: str, now: str) -> tuple[str, str] | None:
    """The next waiting pair for ``uploader``: the one ``pop_for_uploader`` prefers, else the
    queue's oldest (``priority_queue.pop_waiting``); its names, marked handed out. In one write,
    which is what every upload asks; the waiting entries and their pairs' sole uploaders come
    from this connection's copy (rumble.store.waiting) while nothing they depend on changed."""
    copy = waiting.copy_for(db, rumble_id, waiting_entries)
    chosen = _preferred(db, rumble_id, uploader, copy)
    if chosen is not None:
        _mark(db, copy, [chosen[0]], now)
        return chosen[3], chosen[4]
    oldest = next((row for row in copy.rows if row[5]), None)
    if oldest is None:  # none waiting, or only pairs with a retired bot here: the queue's own way
        return priority_queue.pop_waiting(db, rumble_id, now) if copy.rows else None
    # As pop_waiting does: the older entries (a bot of theirs retired) go as handed out.
    _mark(db, copy, [row[0] for row in copy.rows if row[0] <= oldest[0]], now)
    return oldest[3], oldest[4]


def pop_for_uploader(db: Store, rumble_id: int, uploader: str, now: str) -> tuple[str, str] | None:
    """Hand ``uploader`` a waiting pair another uploader alone has played, else one that is not its
    own unconfirmed pairing, else None; the pair's names, marked handed out."""
    copy = waiting.copy_for(db, rumble_id, waiting_entries)
    chosen = _preferred(db, rumble_id, uploader, copy)
    if chosen is None:
        return None
    _mark(db, copy, [chosen[0]], now)
    return chosen[3], chosen[4]


def waiting_entries(db: Store, rumble_id: int) -> list[tuple]:
    """The waiting entries, oldest first: (id, a, b, a's name, b's name, both bots active). All of
    them: the queue is refilled only once empty, so it holds at most one batch."""
    return db.execute(
        "SELECT q.id, q.bot_id, q.opponent_id, a.full_name, b.full_name, pa.active AND pb.active "
        "FROM priority_battles q JOIN bots a ON a.id = q.bot_id JOIN bots b ON b.id = q.opponent_id "
        "JOIN participants pa ON pa.rumble_id = q.rumble_id AND pa.bot_id = q.bot_id "
        "JOIN participants pb ON pb.rumble_id = q.rumble_id AND pb.bot_id = q.opponent_id "
        "WHERE q.rumble_id = ? AND q.handed_out_at IS NULL ORDER BY q.id",
        (rumble_id,),
    ).fetchall()


def _preferred(db: Store, rumble_id: int, uploader: str, copy: waiting.WaitingCopy) -> tuple | None:
    """Of the waiting entries with both bots active: the first one another uploader alone has
    played, else (if some are this uploader's own unconfirmed pairings) the first that is not."""
    live = [row for row in copy.rows if row[5]][:SCAN]
    soles = copy.soles
    unknown = [(row[1], row[2]) for row in live if (row[1], row[2]) not in soles]
    if unknown:  # pairs not looked at yet, or one of whose battles was stored since
        found = pair_sole_uploaders(db, rumble_id, unknown)
        soles.update((pair, found.get(pair)) for pair in unknown)
    chosen = next((row for row in live if soles[(row[1], row[2])] not in (None, uploader)), None)
    if chosen is None and any(soles[(row[1], row[2])] == uploader for row in live):
        chosen = next((row for row in live if soles[(row[1], row[2])] != uploader), None)
    return chosen


def _mark(db: Store, copy: waiting.WaitingCopy, ids: list[int], now: str) -> None:
    """Mark the entries handed out, in the table and in the copy."""
    db.execute(f"UPDATE priority_battles SET handed_out_at = ? WHERE id IN ({', '.join('?' * len(ids))})", (now, *ids))
    marked = set(ids)
    copy.rows = [row for row in copy.rows if row[0] not in marked]
