"""What the pages and the API show about uploaders, built once: the consistency table
(rumble.rankings.uploader_consistency), the unconfirmed pairings of a bot page, and the rollback
preview (rumble.rankings.rollback_preview). Reads only."""

from __future__ import annotations

import copy
import threading
import time
from collections.abc import Callable
from typing import NamedTuple

from flask import current_app

from rumble.rankings import rollback_preview
from rumble.rankings.uploader_consistency import consistency_of
from rumble.store import Store, batch_tables, bots, export, read, uploader_battles, uploader_sums

# (database file, rumble id, what) -> (the rumble's log version, monotonic time computed, rows): per worker
_TABLES: dict[tuple[str, int, str], tuple[tuple, float, list[dict]]] = {}
_TABLES_LOCK = threading.Lock()
_COMPUTING: dict[tuple[str, int, str], threading.Lock] = {}  # held by the thread computing that key
# Rows of sums (uploader, pairing, address) up to which a request works the uploader table out
# itself: about 70 ms of reading and testing; beyond, the batch run's stored table is shown.
LIVE_SUMS = 10_000


class UploaderTable(NamedTuple):
    """The uploader table and where it comes from: ``live`` (worked out for this request or kept
    since), ``stored`` (the batch run's, as of ``computed_at``) or ``pending`` (none yet)."""

    rows: list[dict]
    source: str
    computed_at: str | None = None


def uploader_table(db: Store, rid: int) -> list[dict]:
    """Each uploader of the rumble with its consistency figures, flagged ones first (``uploader_table_state``'s rows)."""
    return uploader_table_state(db, rid).rows


def uploader_table_state(db: Store, rid: int) -> UploaderTable:
    """The rumble's uploader table, and where it comes from.

    Working it out reads the sums of every pairing each uploader shares (rumble.store.uploader_sums):
    a few ms on a small rumble, seconds on a large ladder (4.4 s to read 719,400 rows). So a request
    works it out only while the rumble has at most LIVE_SUMS rows of sums (kept per worker, ``kept``);
    past that it shows the table the scheduled batch run stored (rumble.store.batch_tables),
    as of that run, or none before the first run. A stored table still current is shown either way."""
    with read(db):
        stored = batch_tables.stored(db, rid, batch_tables.UPLOADERS)
        version = batch_tables.version_text(export.log_version(db, rid))
        small = uploader_sums.at_most(db, rid, LIVE_SUMS)
    if stored is not None and (stored.log_version == version or not small):
        return UploaderTable(stored.rows, "stored", stored.computed_at)
    if not small:
        return UploaderTable([], "pending")

    def compute() -> list[dict]:
        with read(db):
            by_pairing = uploader_sums.consistency_totals(db, rid)
        return [v.as_dict() for v in consistency_of(by_pairing)]

    return UploaderTable(kept(db, rid, "uploaders", compute), "live")


def kept(db: Store, rid: int, what: str, compute: Callable[[], list[dict]]) -> list[dict]:
    """``compute()``'s rows for the rumble, kept per worker and computed again only once the rumble
    has changed (store.export.log_version) and UPLOADERS_MAX_AGE_MINUTES have passed, or the
    scheduled run stored its tables (rumble.store.batch_tables) since; a copy."""
    max_age = 60.0 * current_app.config["RUMBLE"]["UPLOADERS_MAX_AGE_MINUTES"]
    key = (current_app.config["RUMBLE"]["DB"], rid, what)
    with read(db):  # what the scheduled run stored since counts as a change too
        version = (export.log_version(db, rid), batch_tables.computed(db, rid))

    def usable(found: tuple) -> bool:  # a new batch run's tables are taken at once, the log's changes after max_age
        return found[0] == version or (found[0][1] == version[1] and time.monotonic() - found[1] < max_age)

    found = _TABLES.get(key)
    if found is not None and usable(found):
        return copy.deepcopy(found[2])
    with _TABLES_LOCK:
        computing = _COMPUTING.setdefault(key, threading.Lock())
    # One thread of a worker computes a key at a time: while it does, the others serve the rows kept
    # before (or, with none kept yet, wait for its result), so a burst of requests costs one computation.
    if found is not None and not computing.acquire(blocking=False):
        return copy.deepcopy(found[2])
    if found is None:
        computing.acquire()
    try:
        found = _TABLES.get(key)
        if found is not None and usable(found):  # computed by another thread while this one waited
            return copy.deepcopy(found[2])
        rows = compute()
        with _TABLES_LOCK:
            _TABLES[key] = (version, time.monotonic(), rows)
        return copy.deepcopy(rows)
    finally:
        computing.release()


def with_confirmation(db: Store, rid: int, page: dict) -> dict:
    """Mark each pairing row of a bot page ``confirmed`` (its battles come from two uploaders or
    more) and give the one ``uploader`` of an unconfirmed one."""
    bot = bots.find_bot(db, page["bot"]["name"])
    with read(db):
        sole = uploader_battles.sole_uploaders(db, rid, bot) if bot is not None else {}
    for row in page["pairings"]:
        row["confirmed"] = row["name"] not in sole
        row["sole_uploader"] = sole.get(row["name"])
    page["unconfirmed"] = sum(1 for row in page["pairings"] if not row["confirmed"])
    return page


def rollback(db: Store, rid: int, uploader: str) -> dict:
    """The APS table without ``uploader``'s battles, next to the current one; nothing changes."""
    with read(db):
        sums = [(u, a, b, n, sa, sb) for u, a, b, n, sa, sb, _ in uploader_sums.pairing_sums(db, rid)]
        active = set(bots.participant_names(db, rid))
    return rollback_preview.preview_of(sums, uploader_sums.SHARE_UNIT, active, uploader)
