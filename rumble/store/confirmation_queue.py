"""Confirmed pairings in the priority queue (issue 14, item 2): a pairing whose accepted battles
all come from one uploader is *unconfirmed*, and a waiting priority battle of such a pairing is
handed to another uploader first.

One small hook in ``rumble.ingest.next_priority_battle``: before the queue's oldest waiting pair
is handed out, ``pop_for_uploader`` looks at the waiting pairs (at most ``SCAN`` of them, oldest
first) and hands this uploader the first one that another uploader alone has played; failing
that, the first one that is not its own unconfirmed pairing. It returns None when neither exists,
and the queue then goes on as before. Unconfirmed pairings reach the queue as they did before
(few battles, then uncertainty: rumble/priority.py); nothing here changes how batches are chosen.
"""

from __future__ import annotations

from rumble.store import Store
from rumble.store.uploader_battles import sole_uploader

SCAN = 64  # waiting entries looked at per hand-out (the queue holds PRIORITY_BATCH, 8 by default)


def pop_for_uploader(db: Store, rumble_id: int, uploader: str, now: str) -> tuple[str, str] | None:
    """Hand ``uploader`` a waiting pair another uploader alone has played, else one that is not its
    own unconfirmed pairing, else None; the pair's names, marked handed out."""
    rows = db.execute(
        "SELECT q.id, q.bot_id, q.opponent_id, a.full_name, b.full_name FROM priority_battles q "
        "JOIN bots a ON a.id = q.bot_id JOIN bots b ON b.id = q.opponent_id "
        "JOIN participants pa ON pa.rumble_id = q.rumble_id AND pa.bot_id = q.bot_id AND pa.active = 1 "
        "JOIN participants pb ON pb.rumble_id = q.rumble_id AND pb.bot_id = q.opponent_id AND pb.active = 1 "
        "WHERE q.rumble_id = ? AND q.handed_out_at IS NULL ORDER BY q.id LIMIT ?",
        (rumble_id, SCAN),
    ).fetchall()
    chosen, soles = None, []
    for row in rows:  # one pairing at a time: the first one another uploader alone played ends the look
        sole = sole_uploader(db, rumble_id, row[1], row[2])
        if sole is not None and sole != uploader:
            chosen = row
            break
        soles.append((row, sole))
    if chosen is None and any(sole == uploader for _, sole in soles):
        chosen = next((row for row, sole in soles if sole != uploader), None)
    if chosen is None:
        return None
    db.execute("UPDATE priority_battles SET handed_out_at = ? WHERE id = ?", (now, chosen[0]))
    return chosen[3], chosen[4]
