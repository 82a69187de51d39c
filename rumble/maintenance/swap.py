"""Rebuild, flag, roll back and unflag without blocking uploads: compute aside, catch up, swap.

``rumble.maintenance.rebuild.rebuild_rumble`` holds the write lock while it replays a whole log (49.8 s for
the 1,200-bot, 720,000-battle ladder), so every upload meanwhile times out. ``recompute`` replays
the same log through the same code (``rebuild.advance``; a 1v1 rumble's in compiled code throughout,
``rebuild.advance_any``, its pairings kept in arrays: 1.4 M pairings as Python objects took a rebuild of
5 M battles to 1.1 GB) outside the lock instead:

1. *Aside.* In a read snapshot (WAL: uploads go on committing), the log up to its newest battle is
   replayed in memory. Melee battles are reassembled into TEMP copies of the melee tables on this
   connection (``store.melee_battles.make_shadow``), which also need no write lock.
2. *Catch up.* In a fresh snapshot the battles and retirements that arrived meanwhile are replayed
   the same way, a few rounds until few are left. The first catch-up also compares the replay with
   the live tables of its snapshot (``Base``): which pairings differ, and every bot's totals.
3. *Swap*, under a short write lock: the last few battles are replayed, the selected battles'
   states change (a rollback, flag or unflag), and only the rows that differ from the replay are
   written: the pairings that differed at step 2 or changed since, every bot's summary, ratings
   and active flag (a row per bot), the melee rows that differ. The generation is bumped, as
   ``rebuild_rumble`` does, so every worker brings its copy of the field up to date: the swap
   records which pairings it rewrote (``field_swaps``), and a worker one generation behind reads
   just those, every bot's ratings and active flag, and the battles since its copy (rumble/ingest/fields.py),
   instead of the whole rumble (1.2 s for 1,200 bots, which an upload would wait for).

The tables equal those of a blocking rebuild at the moment of the swap, bit for bit: the replay is
the same code over the same battles and events in the same order, the totals are exact integer
sums (so updating them gives the same integers as summing afresh), and a row not written is one
the live table already holds with the replay's value. Maintenance runs one at a time
(``<db>.maintenance.lock``); a restore or a blocking rebuild meanwhile (the rumble's generation
or the restore epoch moved) makes it stop with ``Conflict``, having written nothing.
"""

from __future__ import annotations

import contextlib
import fcntl
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import numpy as np

from rumble.ingest import priority
from rumble.maintenance import compiled_replay, rebuild
from rumble.rankings import scores
from rumble.rankings.scores import Totals
from rumble.store import (
    Store,
    battle_log,
    bots,
    melee_battles,
    missing_pairings,
    pairings,
    priority_queue,
    rating_rows,
    read,
    restore_epoch,
    uploader_sums,
    utc_now,
    write,
)
from rumble.store.rumbles import rumble_id as find_rumble_id

CATCH_UP_ROUNDS = 6  # snapshots after the first replay; each replays what arrived during the last
FEW_LEFT = 200  # battles left for the swap to replay under the lock (a few ms each)
# After a swap, a worker catches up on the pairings it rewrote, under the write lock (rumble/ingest/fields.py:
# about 6.5 us a pair, 0.47 s for 72,000), while they are at most WORKER_CATCH_UP_PAIRS or a
# WORKER_CATCH_UP_SHARE of the rumble's pairs; beyond that it reads the whole rumble again, which costs
# about as much whatever the swap rewrote (1.2 s for the 1,200-bot ladder's 719,400 pairs). The writer's
# uploads wait for either.
WORKER_CATCH_UP_PAIRS = 5_000
WORKER_CATCH_UP_SHARE = 0.1


def _catch_up_list(swapped: list[tuple[int, int]], pairs: int) -> list[tuple[int, int]] | None:
    """What ``rating_rows.record_swap`` keeps of a swap's rewritten pairs, of a rumble of ``pairs``
    pairs (each counted once): the list, or None when a whole reload costs less."""
    return swapped if len(swapped) <= max(WORKER_CATCH_UP_PAIRS, WORKER_CATCH_UP_SHARE * pairs) else None


class Conflict(RuntimeError):
    """The rumble was restored or rebuilt by other means while this ran: nothing was written."""


@dataclass
class Base:
    """The live tables as of log battle ``battle_id``, compared with the replay at that point."""

    battle_id: int
    differ: set[tuple[int, int]]  # pairings whose live row is missing or differs from the replay
    extra: set[tuple[int, int]]  # live pairings the replay does not have
    totals: dict[int, Totals]  # each bot's totals over its active opponents, from the replay
    last: dict[int, str]  # each bot's latest pairing battle
    active: dict[int, bool]
    opponents: dict[int, list[int]]


@dataclass
class ArrayBase:
    """``Base`` for a compiled replay (its pairings in ``replay.arrays``): the pairings that differ
    as a mask over its rows, so that the comparison holds a few MB whatever the number of pairings.
    Each bot's totals are summed afresh from the arrays at the swap (exact integers, the same)."""

    battle_id: int
    differ: np.ndarray  # [r, s]: the live row of the pairing of rows r, s is missing or differs from the replay
    extra: set[tuple[int, int]]  # live pairings the replay does not have


@dataclass
class Job:
    """One rumble being recomputed aside: its replay, the live tables it was compared with, and
    what the swap must check still holds."""

    game: str
    replay: rebuild.Replay
    melee: bool
    epoch: int
    generation: int
    sweeps: int = 0  # the rumble's recorded melee sweeps: each bumps the generation once (rumble.ingest.melee.sweep)
    base: Base | ArrayBase | None = None
    written: dict[str, int] = field(default_factory=dict)
    aside_seconds: float = 0.0  # the replay and its catching up, beside the writers
    locked_seconds: float = 0.0  # the swap: from taking the write lock to its commit


@contextlib.contextmanager
def one_at_a_time(db: Store) -> Iterator[None]:
    """Hold ``<db>.maintenance.lock`` (waiting for it): one maintenance job at a time, across processes."""
    if db.lock_path is None:
        yield
        return
    with open(db.lock_path.removesuffix(".lock") + ".maintenance.lock", "a") as lock:
        fcntl.flock(lock.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock.fileno(), fcntl.LOCK_UN)


def recompute(
    db: Store,
    game: str,
    rounds: int,
    min_battles: int,
    progress: Callable[[int], None] | None = None,
    moved: frozenset[int] = frozenset(),
    moved_to: str = "ok",
    in_swap: Callable[[Store, Job], None] | None = None,
) -> Job:
    """Recompute ``game``'s tables aside and swap them in (the caller holds ``one_at_a_time``).

    ``moved`` battles are replayed as if in state ``moved_to``; ``in_swap(db, job)`` runs in the
    swap's write transaction (it changes those battles' states and audits). Returns the job, whose
    ``replay.replayed`` counts every battle replayed."""
    started = time.perf_counter()
    with read(db):
        rid = find_rumble_id(db, game)
        is_melee = rid is not None and melee_battles.is_melee(db, rid)
        if is_melee:  # before the replay starts: it clears and fills the melee tables, these copies
            melee_battles.make_shadow(db)
        replay = rebuild.start(db, game, rounds, moved, moved_to)
        job = Job(
            game,
            replay,
            is_melee,
            restore_epoch(db),
            rating_rows.generation(db, replay.rumble_id),
            _sweeps(db, replay.rumble_id),
        )
        _advance(db, job, progress)
    try:
        for _ in range(CATCH_UP_ROUNDS):
            with read(db):
                _check(db, job)
                done = _advance(db, job, progress)
                if job.base is None and replay.arrays is not None:
                    job.base = _compare_arrays(db, replay, replay.arrays)
                elif job.base is None:
                    job.base = _compare(db, replay)
                    replay.mark()
            if done <= FEW_LEFT and job.base is not None:
                break
        job.aside_seconds = time.perf_counter() - started
        with write(db):
            locked = time.perf_counter()
            _check(db, job)
            if in_swap is not None:
                _moving(db, job, in_swap)
            _advance(db, job, None)  # no progress callback under the lock: it may write (a job's progress row)
            if isinstance(job.base, ArrayBase):
                _swap_arrays(db, job, job.base, min_battles)
            else:
                _swap(db, job, min_battles)
        job.locked_seconds = time.perf_counter() - locked
    finally:
        if job.melee:
            melee_battles.drop_shadow(db)
    return job


def _moving(db: Store, job: Job, in_swap: Callable[[Store, Job], None]) -> None:
    """``in_swap(db, job)``, which may move the replay's ``moved`` battles into or out of state 'ok',
    and the uploader statistics' sums following them (rumble.store.uploader_sums): a battle that left
    'ok' is taken out, one that entered it is added, exactly, in the same transaction."""
    moved = job.replay.moved
    before = uploader_sums.counted(db, moved) if moved else set()
    in_swap(db, job)
    if moved:
        after = uploader_sums.counted(db, moved)
        uploader_sums.uncount(db, before - after)
        uploader_sums.count(db, after - before)


def _sweeps(db: Store, rumble_id: int) -> int:
    return len(melee_battles.sweeps_in_order(db, rumble_id))


def _check(db: Store, job: Job) -> None:
    """Conflict if the rumble was restored or rebuilt meanwhile: a generation bumped by more than the
    melee sweeps recorded since (which the replay catches up on, as it does on battles)."""
    rid = job.replay.rumble_id
    if (
        restore_epoch(db) != job.epoch
        or rating_rows.generation(db, rid) - job.generation != _sweeps(db, rid) - job.sweeps
    ):
        raise Conflict(
            f"{job.game} was restored or rebuilt by other means meanwhile; nothing was changed, run it again"
        )


def _advance(db: Store, job: Job, progress: Callable[[int], None] | None) -> int:
    """Replay what the log holds beyond the replay (inside a snapshot or the write transaction)."""
    # a melee rumble's whole battles too; a 1v1 log as logged in compiled code, from its start to the swap
    return rebuild.advance_any(db, job.replay, battle_log.newest_id(db), progress)


COMPARE_ROWS = 100_000  # live pairings compared with a compiled replay's arrays at once
TIME_TEXT = "U24"  # a stored time's 23 characters and one more: a longer text, cut there, stays different


def _compare_arrays(db: Store, replay: rebuild.Replay, table: compiled_replay.Pairings) -> ArrayBase:
    """``_compare`` for a compiled replay: the live pairings compared with its arrays, COMPARE_ROWS at a time."""
    row_of = _rows_by_id(table)
    played = table.battles > 0
    seen = np.zeros_like(played)
    differ = np.zeros_like(played)
    extra: set[tuple[int, int]] = set()
    live = pairings.rumble_pairings(db, replay.rumble_id)
    while rows := live.fetchmany(COMPARE_ROWS):
        a, b, n, aps, aps_m2, survival = np.array([row[:6] for row in rows], dtype=float).T
        r, s = _rows_at(row_of, a.astype(np.int64)), _rows_at(row_of, b.astype(np.int64))
        known = (r >= 0) & (s >= 0)
        known[known] = played[r[known], s[known]]
        extra.update(zip(a[~known].astype(np.int64).tolist(), b[~known].astype(np.int64).tolist()))
        r, s = r[known], s[known]
        last = np.array([row[6] for row in rows], dtype=TIME_TEXT)
        same = (
            (n[known] == table.battles[r, s])
            & (aps[known] == table.means[0, r, s])
            & (aps_m2[known] == table.means[1, r, s])
            & (survival[known] == table.means[2, r, s])
            & (last[known] == rebuild.time_texts(table.last_ms[r, s]))
        )
        seen[r, s] = True
        differ[r, s] = ~same
    differ |= played & ~seen  # pairings the live table lacks
    return ArrayBase(replay.battle_id, differ, extra)


def _rows_by_id(table: compiled_replay.Pairings) -> np.ndarray:
    """Each bot id's row in a compiled replay's arrays (-1: none)."""
    row_of = np.full(max(table.row, default=0) + 1, -1, dtype=np.int64)
    row_of[list(table.row.keys())] = list(table.row.values())
    return row_of


def _rows_at(row_of: np.ndarray, ids: np.ndarray) -> np.ndarray:
    """The rows of bot ``ids`` (-1 for a bot the replay has no row for)."""
    inside = (ids >= 0) & (ids < len(row_of))
    return np.where(inside, row_of[np.where(inside, ids, 0)], -1)


def _compare(db: Store, replay: rebuild.Replay) -> Base:
    """The live pairings that differ from the replay, and each bot's totals (in the replay's snapshot)."""
    state, seen = replay.state, 0
    differ, extra = set(), set()
    for a, b, *row in pairings.rumble_pairings(db, replay.rumble_id):
        p = state.get((a, b))
        if p is None:
            extra.add((a, b))
            continue
        seen += 1
        if _values(p) != tuple(row):
            differ.add((a, b))
    if seen < len(state):  # pairings the live table lacks
        live = {(a, b) for a, b, *_ in pairings.rumble_pairings(db, replay.rumble_id)}
        differ |= state.keys() - live
    active = {bot: replay.field.is_active(bot) for bot in replay.field.ids}
    by_bot: dict[int, list] = {}
    opponents: dict[int, list[int]] = {}
    last: dict[int, str] = {}
    for (a, b), p in state.items():
        opponents.setdefault(b, []).append(a)
        if p.last_battle > last.get(a, ""):
            last[a] = p.last_battle
        if active.get(b):
            by_bot.setdefault(a, []).append(p)
    totals = {a: scores.totals_of(by_bot.get(a, ())) for a in last}
    return Base(replay.battle_id, differ, extra, totals, last, active, opponents)


def _values(p: scores.Pairing) -> tuple:
    """A pairing as the table's columns hold it."""
    return (p.battles, p.aps, p.aps_m2, p.survival, p.last_battle)


def _swap(db: Store, job: Job, min_battles: int) -> None:
    """Write the replay over the live tables where they differ (caller holds the write transaction)."""
    replay, base = job.replay, job.base
    if not isinstance(base, Base):
        raise ValueError("a job is swapped in only after its comparison with the live tables (job.base)")
    rid, state, changed = replay.rumble_id, replay.state, replay.changed or {}
    rebuild.add_participants(db, replay)  # a participant without a counted battle, as a full rebuild has it
    active = {bot: replay.field.is_active(bot) for bot in replay.field.ids}
    totals, last = dict(base.totals), dict(base.last)
    flipped = [bot for bot, on in active.items() if on != base.active.get(bot, False)]
    keys = set(changed) | {(a, bot) for bot in flipped for a in base.opponents.get(bot, ())}
    for a, b in keys:
        old, new = changed.get((a, b), state.get((a, b))), state.get((a, b))
        total = totals.get(a, Totals())
        if base.active.get(b, False):
            total = total - scores.contribution(old)
        if active.get(b, False):
            total = total + scores.contribution(new)
        totals[a] = total
        if new is not None and new.last_battle > last.get(a, ""):
            last[a] = new.last_battle
    touched = {(a, b) for x, y in battle_log.pairs_after(db, rid, base.battle_id) for a, b in ((x, y), (y, x))}
    since = set(changed) | touched  # changed since the comparison: written only where the live row differs now
    recheck = sorted(key for key in since if key in state and key not in base.differ)  # not a set of every pairing
    live = pairings.pairing_values(db, rid, recheck)
    write_keys = {key for key in base.differ if key in state} | {
        (a, b) for a, b in recheck if live.get((a, b)) != _values(state[a, b])
    }
    drop_keys = (base.extra | since) - state.keys()
    held = priority_queue.held_pairs(db, rid)
    pairings.replace_pairings(
        db,
        rid,
        (
            (
                a,
                b,
                state[a, b],
                priority.pairing_priority(state[a, b], min_battles) if a < b and (a, b) not in held else None,
            )
            for a, b in sorted(write_keys)
        ),
    )
    pairings.delete_pairings(db, rid, sorted(drop_keys))
    order = sorted(last)
    flags = bots.sync_active(db, rid, active, utc_now())
    missing_pairings.follow(db, rid, write_keys, drop_keys, flags)
    pairings.clear_totals(db, rid)
    pairings.put_totals(db, rid, [(a, totals[a], scores.summary(totals[a]), last[a]) for a in order])
    rating_rows.clear_ratings(db, rid)
    rated = [
        (bot, replay.field.ratings(bot)) for bot in order
    ]  # a melee bot whose battles are all still open has none yet
    rating_rows.put_ratings(db, rid, [(bot, r) for bot, r in rated if r.rated_at == r.rated_at])  # NaN: never rated
    job.written = {"pairings": len(write_keys) + len(drop_keys), "bots": len(order)}
    if job.melee:
        job.written["melee rows"] = melee_battles.swap_shadow(db, rid)
    rating_rows.bump_generation(db, rid)
    swapped = sorted({(min(a, b), max(a, b)) for a, b in write_keys | drop_keys})
    rating_rows.record_swap(db, rid, rating_rows.generation(db, rid), _catch_up_list(swapped, len(state) // 2))
    # This process's copy of the field (shared by its connections, rumble.ingest.fields) is now a generation
    # behind, as every worker's is: its next write catches it up on the pairings recorded here.


def _swap_arrays(db: Store, job: Job, base: ArrayBase, min_battles: int) -> None:
    """``_swap`` for a compiled replay, from its arrays: the rows to write chosen as a mask over them
    and written a block of bots at a time, every bot's summary summed afresh (``rebuild.summaries_of``)."""
    replay, table = job.replay, job.replay.arrays
    if table is None:
        raise ValueError("not a compiled replay")
    rid = replay.rumble_id
    rebuild.add_participants(db, replay)  # a participant without a counted battle, as a full rebuild has it
    active = {bot: replay.field.is_active(bot) for bot in replay.field.ids}
    row_of = _rows_by_id(table)
    played = table.battles > 0
    write_rows = np.zeros_like(played)  # the arrays may have grown since the comparison: new bots' rows
    write_rows[: len(base.differ), : len(base.differ)] = base.differ
    write_rows &= played
    touched = {(a, b) for x, y in battle_log.pairs_after(db, rid, base.battle_id) for a, b in ((x, y), (y, x))}
    # changed since the comparison: written only where the live row differs now
    since = [
        (a, b) for a, b in sorted(touched) if _played_at(table, row_of, a, b) and not _marked(write_rows, row_of, a, b)
    ]
    live = pairings.pairing_values(db, rid, since)
    for a, b in since:
        if live.get((a, b)) != _values_at(table, row_of, a, b):
            write_rows[row_of[a], row_of[b]] = True
    drop_keys = {(a, b) for a, b in base.extra | touched if not _played_at(table, row_of, a, b)}
    held = priority_queue.held_pairs(db, rid)

    def rows() -> Iterator[tuple[int, int, scores.Pairing, float | None]]:
        for p in rebuild.played_blocks(table, write_rows):
            for a, b, n, aps, aps_m2, survival, when, rank in rebuild.pairing_rows(p, held, min_battles):
                yield a, b, scores.Pairing(n, aps, aps_m2, survival, when), rank

    pairings.replace_pairings(db, rid, rows())
    pairings.delete_pairings(db, rid, sorted(drop_keys))
    order = rebuild.bots_with_pairings(table)
    flags = bots.sync_active(db, rid, active, utc_now())
    either = write_rows | write_rows.T  # each pair once (a < b), in id order: the missing pairings follow pairs
    written = [
        (a, b) for p in rebuild.played_blocks(table, either) for a, b in zip(p.a.tolist(), p.b.tolist()) if a < b
    ]
    missing_pairings.follow(db, rid, written, drop_keys, flags)
    pairings.clear_totals(db, rid)
    pairings.put_totals(db, rid, rebuild.summaries_of(table, {bot for bot, on in active.items() if on}))
    rating_rows.clear_ratings(db, rid)
    rated = [(bot, replay.field.ratings(bot)) for bot in order]
    rating_rows.put_ratings(db, rid, [(bot, r) for bot, r in rated if r.rated_at == r.rated_at])  # NaN: never rated
    job.written = {"pairings": int(write_rows.sum()) + len(drop_keys), "bots": len(order)}
    rating_rows.bump_generation(db, rid)
    swapped = sorted(set(written) | {(min(a, b), max(a, b)) for a, b in drop_keys})
    rating_rows.record_swap(db, rid, rating_rows.generation(db, rid), _catch_up_list(swapped, int(played.sum()) // 2))


def _played_at(table: compiled_replay.Pairings, row_of: np.ndarray, a: int, b: int) -> bool:
    """True if the compiled replay has a pairing of bot ``a`` against bot ``b``."""
    r, s = _rows_at(row_of, np.array([a, b], dtype=np.int64)).tolist()
    return r >= 0 and s >= 0 and bool(table.battles[r, s] > 0)


def _marked(mask: np.ndarray, row_of: np.ndarray, a: int, b: int) -> bool:
    return bool(mask[row_of[a], row_of[b]])


def _values_at(table: compiled_replay.Pairings, row_of: np.ndarray, a: int, b: int) -> tuple:
    """The played pairing of bot ``a`` against bot ``b`` as the table's columns hold it (``_values``)."""
    r, s = row_of[a], row_of[b]
    (when,) = rebuild.times_as_stored(table.last_ms[r, s : s + 1])
    return (int(table.battles[r, s]), *(float(x) for x in table.means[:, r, s]), when)
