"""Each process's in-memory copy of a rumble's ratings field, kept in step with the database.

The all-pairings rating updates read a bot's whole row of pairings and every opponent's ratings
on each upload; reading those from SQLite each time would cost more than the rest of the upload.
So every server worker keeps a ``Field`` per rumble (rumble/ratings/online.py) and, at the start
of each write transaction, brings it up to date: after battles stored by other workers it reloads
just the pairings and ratings those battles touched; after a retirement, a rebuild or anything
else that bumps the rumble's generation it reloads the rumble whole. Which of those happened it
learns from the rumble's version (``rating_rows.version``), asked only when another connection
committed or this one wrote to the log since (``store.log_stamp``): in the writer process, which
alone writes uploads, that is never between two uploads. The copy lives in the
cache the process's connections to the database share (``Store.shared``), which a rolled-back
transaction clears, so it never keeps a value the database does not have.

Threads: a process's threads (each with a connection of its own) share one copy per
rumble. Only a write transaction changes a copy in place (``current`` and its callers in
rumble.ingest.apply), and write transactions are serialised by the write lock, which threads of one
process take like separate processes do (each connection opens the lock file itself). ``preload``
only swaps in a whole new copy, read in one snapshot, under ``_loading`` so that two threads do not
read the same rumble at once; a copy is consistent with the database at its ``seen`` versions,
whichever thread put it there, so the next ``current`` catches it up.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

import numpy as np

from rumble.ratings.online import Field, capacity_for, unrated
from rumble.store import Store, log_stamp, rating_rows, read


@dataclass
class RumbleCopy:
    field: Field
    seen: tuple[int, int, int]  # (last battle id, last event id, generation) it reflects
    # ``store.log_stamp`` when ``seen`` was last known to be the database's version: while the
    # stamp is the same, nothing changed the version, and ``current`` need not read it
    checked: tuple[int, int, int] | None = None


_loading = threading.Lock()  # one thread of a process reads a whole rumble at a time


def _key(rumble_id: int) -> tuple[str, int]:
    return ("field", rumble_id)


def load(db: Store, rumble_id: int) -> RumbleCopy:
    """Read a rumble's participants, pairing APS and ratings into a new Field."""
    seen = rating_rows.version(db, rumble_id)
    people = sorted(rating_rows.participants(db, rumble_id))
    field = Field(capacity_for(len(people)))  # sized once, not grown bot by bot
    for bot, active in people:
        field.set_active(bot, active)
    ids = np.asarray(field.ids)
    for rows in rating_rows.pairing_aps_chunks(db, rumble_id):  # in chunks: a worker's peak memory
        table = np.asarray(rows, dtype=float)
        where = np.searchsorted(ids, table[:, :2].astype(np.int64))
        field.aps[where[:, 0], where[:, 1]] = table[:, 2] / 100.0
    for bot, ratings in rating_rows.ratings_of(db, rumble_id).items():
        field.set_ratings(bot, ratings)
    return RumbleCopy(field, seen)


def preload(db: Store, rumble_id: int) -> None:
    """Load the rumble's copy ahead of a write transaction when this process has none, or only one
    of an older generation (after a rebuild or a restore), without holding the write lock (only
    reads), so that no upload holds the lock while a whole rumble is read. A current copy is left
    to be caught up inside the transaction: that is a few rows (the battles other workers stored
    meanwhile), and catching up here as well would cost every upload a read transaction."""
    if _is_current(db, rumble_id):
        return
    with _loading:
        if _is_current(db, rumble_id):  # another thread read it meanwhile
            return
        copy = db.shared.get(_key(rumble_id))
        if copy is not None and rating_rows.swap_after(db, rumble_id, copy.seen[2]) is not None:
            return  # a maintenance swap with a short list of changes: caught up in the transaction
        with read(db):
            db.shared[_key(rumble_id)] = load(db, rumble_id)


def preload_all(db: Store) -> None:
    """``preload`` every rumble that has participants (a server process about to take uploads)."""
    from rumble.store.rumbles import rumbles_with_participants

    for rumble_id in rumbles_with_participants(db):  # not rumble_rows: it counts the whole log
        preload(db, rumble_id)


def _is_current(db: Store, rumble_id: int) -> bool:
    copy = db.shared.get(_key(rumble_id))
    if copy is not None and copy.checked == log_stamp(db):
        return True
    return copy is not None and copy.seen[2] == rating_rows.generation(db, rumble_id)


def current(db: Store, rumble_id: int) -> RumbleCopy:
    """The rumble's copy, brought up to date (call inside the write transaction).

    It asks the database for the rumble's version only when something may have changed it since
    the copy was last brought up to date on this connection: another connection's commit, or this
    one's write to the log (``store.log_stamp``). On the upload path that leaves a query per upload
    unasked: the writer process is the only connection that uploads write to."""
    copy = db.shared.get(_key(rumble_id))
    if copy is not None and copy.checked == log_stamp(db):
        return copy
    seen = rating_rows.version(db, rumble_id)
    swapped = (
        rating_rows.swap_after(db, rumble_id, copy.seen[2]) if copy is not None and copy.seen[2] != seen[2] else None
    )
    if swapped is not None and copy is not None:
        _catch_up(db, rumble_id, copy, swapped)
    elif copy is None or copy.seen[2] != seen[2]:
        copy = db.shared[_key(rumble_id)] = load(db, rumble_id)
    elif copy.seen[:2] != seen[:2]:
        _catch_up(db, rumble_id, copy)
    copy.seen = seen
    copy.checked = log_stamp(db)
    return copy


def saw(db: Store, copy: RumbleCopy, battle: int | None = None, event: int | None = None) -> None:
    """Note in ``copy`` (brought up to date by ``current``, then changed in place by the caller)
    the battle or participant event this connection just logged. If that was the only write to
    the log since ``current``, the copy stays current without asking the database again."""
    before = copy.checked
    copy.seen = (copy.seen[0] if battle is None else battle, copy.seen[1] if event is None else event, copy.seen[2])
    stamp = log_stamp(db)
    copy.checked = stamp if before == (stamp[0], stamp[1], stamp[2] - 1) else None


def _catch_up(db: Store, rumble_id: int, copy: RumbleCopy, swapped: list[tuple[int, int]] | None = None) -> None:
    """Reload what the battles and participant events stored since the copy's last ones changed.

    A retirement or restoration changes only that bot's active flag here (its opponents' summaries
    live in the database, not in the copy), so it costs as little as a battle. After a maintenance
    swap (``swapped``: the pairings it rewrote, rumble/maintenance/swap.py) every bot's ratings and flag
    are read again too, and a rewritten pairing the table no longer has is forgotten.
    """
    battles = rating_rows.battles_since(db, rumble_id, copy.seen[0])
    events = rating_rows.bots_with_events_since(db, rumble_id, copy.seen[1])
    rated_melee = rating_rows.bots_rated_by_melee_battles(
        db, rumble_id, [battle for battle, _, _ in battles]
    )  # whole battles closed meanwhile
    bots = (
        None
        if swapped is not None
        else sorted({bot for _, a, b in battles for bot in (a, b)} | set(events) | set(rated_melee))
    )
    field = copy.field
    for bot, active in rating_rows.participants(db, rumble_id, bots):
        field.set_active(bot, active)
    pairs = sorted({(a, b) for _, a, b in battles} | set(swapped or ()))
    if swapped:  # NaN, as a fresh load has it, unless the table still has the pairing
        firsts, seconds = [a for a, _ in swapped], [b for _, b in swapped]
        field.set_pairings(firsts + seconds, seconds + firsts, [np.nan] * (2 * len(swapped)))
    found = rating_rows.pairing_aps(db, rumble_id, pairs)
    field.set_pairings([row[0] for row in found], [row[1] for row in found], [row[2] for row in found])
    rated = rating_rows.ratings_of(db, rumble_id, bots)
    for bot, ratings in rated.items():
        field.set_ratings(bot, ratings)
    if swapped is not None:
        for bot in field.ids:
            if bot not in rated:  # its ratings row went with its last counted battle
                field.set_ratings(bot, unrated())


def forget(db: Store, rumble_id: int) -> None:
    db.shared.pop(_key(rumble_id), None)
