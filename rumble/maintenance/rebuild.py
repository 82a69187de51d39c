"""``rumble rebuild``: a rumble's derived tables recomputed from its battle log and events.

The uploader statistics' sums (rumble.store.uploader_sums) are summed afresh from the log in SQL:
exact integers, so they equal the ones the upload path kept, whatever the order of the battles.

The log's battles and the participant events (retirements, restorations) are replayed in the
order they happened, through the same pure functions as the upload path: ``scores.score_battle``
for the pairings, ``ingest.apply.rate`` (``online.rate_battle``) for the ratings, and the exact
``scores`` totals for the summaries. In a melee rumble the pairs only record their pairings, and
``melee.Replay`` reassembles the whole battles and rates each once as it closes (with the recorded
sweeps in place), as the upload path does. Each rating depends on who was active and on every pairing
at the moment of its battle, which is why the events are replayed in place, not just their end
state. The result equals the online tables bit for bit.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from dataclasses import field as dc_field
from operator import itemgetter
from typing import TypeVar

import numpy as np

from rumble.ingest import fields, melee, priority
from rumble.ingest.apply import battle_shares, rate, record_pairings
from rumble.maintenance import compiled_replay
from rumble.rankings import scores
from rumble.rankings.scores import Pairing
from rumble.ratings import glicko2, rank_points
from rumble.ratings.columns import STEPPED
from rumble.ratings.online import Field
from rumble.store import (
    Store,
    battle_log,
    bots,
    melee_battles,
    missing_pairings,
    page_cache,
    pairings,
    priority_queue,
    rating_rows,
    uploader_sums,
    utc_now,
)
from rumble.store.rumbles import by_survival
from rumble.store.rumbles import rumble_id as find_rumble_id

T = TypeVar("T")

PROGRESS_EVERY = 10_000
# SQLite's page cache while a rebuild writes a rumble's tables, which also bounds the memory of its
# sorts (uploader_sums.refill groups the whole log): at 5 M battles and 1,200 bots (1.4 M pairings)
# the writing took as long with 64 MB as with 256 MB, which held some 400 MB more at its peak, and
# a fifth longer with SQLite's default 2 MB (scripts/bench_rebuild.py).
WRITE_CACHE_KIB = 64 * 1024
WRITE_BOTS = 100  # bots whose pairings a compiled rebuild turns into arrays and rows at once
REPLAY_RUN = 50_000  # battles a compiled replay reads as arrays at once (read_ahead reads the next meanwhile)
_NOT_MS = [0, 1, 2, 3, 4, 5, 6, 8]  # the columns of battle_log.scored_battle_runs but the receive time


@dataclass
class Replay:
    """A rumble's log replayed in order, in memory: its pairings and its ratings field as of log
    battle ``battle_id`` and participant event ``event_id`` (``advance`` goes on from there).

    ``moved`` and ``moved_to`` replay a state change before it is written (a rollback, a flag, an
    unflag computed aside, rumble.maintenance.swap): those battles count as if already in ``moved_to``.
    ``changed``, once ``mark`` set it, keeps each pairing's value from before its first change since.
    """

    rumble_id: int
    rounds: int
    survival: bool
    field: Field = dc_field(default_factory=Field)
    state: dict[tuple[int, int], Pairing] = dc_field(default_factory=dict)
    battle_id: int = 0
    event_id: int = 0
    replayed: int = 0
    moved: frozenset[int] = frozenset()
    moved_to: str = "ok"
    changed: dict[tuple[int, int], Pairing | None] | None = None
    whole_battles: melee.Replay | None = None  # a melee rumble's whole battles, replayed alongside
    arrays: compiled_replay.Pairings | None = None  # a compiled replay's pairings (``state`` stays empty)

    def counts(self, state: str, battle_id: int) -> bool:
        """True if a battle in ``state`` counts in this replay."""
        return (self.moved_to if battle_id in self.moved else state) == "ok"

    def mark(self) -> None:
        """From now on, remember the value each pairing had before it changes (``changed``)."""
        self.changed = {}


def start(db: Store, game: str, rounds: int, moved: frozenset[int] = frozenset(), moved_to: str = "ok") -> Replay:
    """An empty replay of ``game`` with every participant in its field (in id order, as online)."""
    rumble_id = find_rumble_id(db, game)
    if rumble_id is None:
        raise LookupError(f"rumble {game!r} is not in the database")
    replay = Replay(
        rumble_id, rounds, by_survival(db, rumble_id), moved=moved, moved_to=moved_to
    )  # twinduel: rounds won
    add_participants(db, replay)
    # A melee rumble rates whole battles, as they close, in log order with the recorded sweeps
    if melee_battles.is_melee(db, rumble_id):
        replay.whole_battles = melee.Replay(db, rumble_id, replay.field)
    return replay


def add_participants(db: Store, replay: Replay) -> None:
    for bot in pairings.all_participant_ids(db, replay.rumble_id):
        replay.field.add(bot)


def advance(db: Store, replay: Replay, up_to: int, progress: Callable[[int], None] | None = None) -> int:
    """Replay the battles after ``replay.battle_id`` up to log id ``up_to`` and every participant
    event recorded so far (the caller holds a read snapshot, or the write transaction, in which
    ``up_to`` is the log's newest id); the number of battles replayed."""
    if replay.arrays is not None:
        raise ValueError("a compiled replay's pairings are in its arrays: it goes on only in compiled code")
    field, state, changed, whole = replay.field, replay.state, replay.changed, replay.whole_battles
    events = rating_rows.events_in_order(db, replay.rumble_id, replay.event_id)
    next_event = replayed = 0
    states = ("ok",) if replay.moved_to != "ok" else ("ok", "flagged", "removed")
    if whole is not None:
        whole.begin(replay.battle_id, up_to, states)
    for logged in battle_log.iter_scored_battles(
        db, replay.rumble_id, after=replay.battle_id, up_to=up_to, states=states
    ):
        if not replay.counts(logged.state, logged.id):
            continue
        while next_event < len(events) and events[next_event][3] < logged.id:
            _, bot, active, _ = events[next_event]
            field.set_active(bot, active)
            next_event += 1
        a, b, when = logged.first_id, logged.second_id, logged.received_at
        if changed is not None:
            changed.setdefault((a, b), state.get((a, b)))
            changed.setdefault((b, a), state.get((b, a)))
        shares = battle_shares(
            logged.first_score, logged.second_score, logged.first_firsts, logged.second_firsts, replay.survival
        )
        state[a, b], state[b, a] = scores.score_battle(
            state.get((a, b)),
            state.get((b, a)),
            shares,
            (logged.first_firsts, logged.second_firsts),
            replay.rounds,
            when,
        )
        if whole is not None:
            whole.before_pair(logged.id)
            record_pairings(field, a, b, state[a, b], state[b, a])
            whole.pair(logged.id)
        else:
            rate(field, a, b, state[a, b], state[b, a], scores.battle_percent(*shares) / 100.0, when)
        replayed += 1
        if progress and replayed % PROGRESS_EVERY == 0:
            progress(PROGRESS_EVERY)
    if whole is not None:  # sweeps after the last pair, before the retirements after it (as they happened)
        whole.finish()
    for _, bot, active, _ in events[next_event:]:
        field.set_active(bot, active)
    if events:
        replay.event_id = events[-1][0]
    if progress:
        progress(replayed % PROGRESS_EVERY)
    replay.battle_id = max(replay.battle_id, up_to)
    replay.replayed += replayed
    return replayed


def compiled(replay: Replay) -> bool:
    """True if ``advance_compiled`` can replay it: a 1v1 rumble (no pairing watched) whose ratings are
    all the compiled step's, from its start or on from where ``advance_compiled`` left it (its
    pairings in ``arrays``)."""
    return (
        replay.whole_battles is None
        and replay.changed is None
        and not replay.state
        and (replay.battle_id == 0 or replay.arrays is not None)
        and not STEPPED
    )


def advance_compiled(db: Store, replay: Replay, up_to: int, progress: Callable[[int], None] | None = None) -> int:
    """``advance`` for a replay that is ``compiled``, in compiled code (rumble.maintenance.compiled_replay):
    the same values, bit for bit, several times faster. Its pairings stay in ``replay.arrays``."""
    if not compiled(replay):
        raise ValueError("this replay cannot be compiled: use advance")
    field = replay.field
    table = replay.arrays if replay.arrays is not None else compiled_replay.Pairings(len(field.ids) + 64)
    events = rating_rows.events_in_order(db, replay.rumble_id, replay.event_id)
    next_event = replayed = 0
    for ids, bots_of, shares, firsts, ms in read_ahead(_runs(db, replay, up_to)):
        for bot in np.unique(bots_of).tolist():  # every bot of the run in the field first: positions move as bots join
            field.add(bot)
        rows_of = table.rows_of(bots_of.ravel()).reshape(-1, 2)
        k = 0
        while k < len(ids):
            while next_event < len(events) and events[next_event][3] < ids[k]:
                field.set_active(events[next_event][1], events[next_event][2])
                next_event += 1
            stop = len(ids) if next_event == len(events) else int(np.searchsorted(ids, events[next_event][3], "right"))
            at = np.array([field.position[bot] for bot in bots_of[k:stop].ravel().tolist()], dtype=np.int64)
            compiled_replay.replay_battles(
                field.aps,
                field.active,
                field.table,
                field.xonstat_battles,
                len(field.ids),
                field.work,
                glicko2.TAU,
                rank_points.UPSET_BONUS,
                at.reshape(-1, 2),
                rows_of[k:stop],
                shares[k:stop],
                firsts[k:stop],
                ms[k:stop],
                replay.rounds,
                table.battles,
                table.means,
                table.last_ms,
            )
            if progress:
                progress(stop - k)
            replayed += stop - k
            k = stop
    for _, bot, active, _ in events[next_event:]:
        field.set_active(bot, active)
    if events:
        replay.event_id = events[-1][0]
    replay.arrays = table
    replay.battle_id = max(replay.battle_id, up_to)
    replay.replayed += replayed
    return replayed


def _runs(db: Store, replay: Replay, up_to: int) -> Iterator[tuple[np.ndarray, ...]]:
    """The battles after ``replay.battle_id`` up to ``up_to`` that count in the replay (its
    ``moved`` ones as if in ``moved_to``) as arrays, a run at a time: ids, both bots, what each
    one's battle percentage is computed from, firsts, receive times in ms."""
    moved = np.array(sorted(replay.moved), dtype=np.int64)
    states = ("ok", "flagged", "removed") if len(moved) and replay.moved_to == "ok" else ("ok",)
    for rows in battle_log.scored_battle_runs(db, replay.rumble_id, replay.battle_id, up_to, REPLAY_RUN, states):
        read = np.array(rows, dtype=np.int64)
        columns, ms = read[:, _NOT_MS], np.ascontiguousarray(read[:, 7])
        if len(moved):  # (as ``Replay.counts``)
            counts = np.where(np.isin(columns[:, 0], moved), replay.moved_to == "ok", columns[:, 7] == 1)
            columns, ms = columns[counts], ms[counts]
        shares = columns[:, 5:7] if replay.survival else columns[:, 3:5]  # battle_shares: twinduel counts rounds won
        yield columns[:, 0], columns[:, 1:3], np.ascontiguousarray(shares), np.ascontiguousarray(columns[:, 5:7]), ms


def read_ahead(items: Iterator[T]) -> Iterator[T]:
    """``items``, each next one made in a thread while the caller works on the one it has: the
    compiled replay releases the GIL, so the log's next run is read and turned into arrays on the
    other core (a twelfth of a 1v1 replay's time, scripts/bench_rebuild.py). The connection is
    used from one thread at a time: the caller makes no query while it holds an item."""
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="read-ahead") as pool:
        following = pool.submit(next, items, None)
        while (item := following.result()) is not None:
            following = pool.submit(next, items, None)
            yield item


def advance_any(db: Store, replay: Replay, up_to: int, progress: Callable[[int], None] | None = None) -> int:
    """``advance``, in compiled code when the replay is ``compiled`` (its pairings then in ``arrays``,
    where a later ``advance_any`` goes on)."""
    if compiled(replay):
        return advance_compiled(db, replay, up_to, progress)
    return advance(db, replay, up_to, progress)


def state_of(replay: Replay) -> dict[tuple[int, int], Pairing]:
    """The replay's pairings as ``Replay.state`` holds them (built from the arrays of a compiled one)."""
    return replay.state if replay.arrays is None else _pairings_of(replay.arrays)


def _pairings_of(table: compiled_replay.Pairings) -> dict[tuple[int, int], Pairing]:
    """The played pairings of a compiled replay as ``Replay.state`` holds them."""
    bot_of = bots_of_rows(table)
    r, s = np.nonzero(table.battles > 0)
    times = np.datetime_as_string(table.last_ms[r, s].astype("datetime64[ms]"), unit="ms").tolist()
    return {
        (a, b): Pairing(n, aps, m2, survival, f"{when[:10]} {when[11:]}")  # numpy writes a T between date and time
        for a, b, n, aps, m2, survival, when in zip(
            bot_of[r].tolist(),
            bot_of[s].tolist(),
            table.battles[r, s].tolist(),
            table.means[0, r, s].tolist(),
            table.means[1, r, s].tolist(),
            table.means[2, r, s].tolist(),
            times,
        )
    }


def rebuild_rumble(
    db: Store,
    game: str,
    rounds: int,
    min_battles: int,
    progress: Callable[[int], None] | None = None,
    battle_by_battle: bool = False,
) -> int:
    """Recompute a rumble's pairings, summaries and ratings (caller holds the write transaction
    throughout: ``rumble.maintenance.swap`` does the same without blocking uploads).

    Returns the number of battles replayed; ``progress(n)`` is called as battles are replayed. A
    1v1 rumble is replayed in compiled code (``advance_compiled``) unless ``battle_by_battle``
    asks for the Python replay every rumble can take (``advance``; tests compare the two).
    """
    replay = start(db, game, rounds)
    if compiled(replay) and not battle_by_battle:
        advance_compiled(db, replay, battle_log.newest_id(db), progress)
        with page_cache(db, WRITE_CACHE_KIB):
            _write_compiled(db, replay, min_battles)
    else:
        advance(db, replay, battle_log.newest_id(db), progress)
        with page_cache(db, WRITE_CACHE_KIB):
            _write(db, replay.rumble_id, replay.state, replay.field, min_battles)
    return replay.replayed


def _write(db: Store, rumble_id: int, state: dict[tuple[int, int], Pairing], field: Field, min_battles: int) -> None:
    """Replace the rumble's pairings, summaries and ratings with the replayed ones."""
    held = priority_queue.held_pairs(db, rumble_id)  # queued or recently handed out: kept out of the index
    by_bot: dict[int, list[tuple[int, Pairing]]] = {}  # each bot's pairings, then sorted by opponent:
    for (a, b), p in state.items():  # much cheaper than sorting a million (a, b) keys
        by_bot.setdefault(a, []).append((b, p))
    order = sorted(by_bot)
    for a in order:
        by_bot[a].sort(key=itemgetter(0))
    rows = (
        (
            rumble_id,
            a,
            b,
            p.battles,
            p.aps,
            p.aps_m2,
            p.survival,
            p.last_battle,
            priority.pairing_priority(p, min_battles) if a < b and (a, b) not in held else None,
        )
        for a in order
        for b, p in by_bot[a]
    )

    def summaries(active: set[int]) -> list[tuple[int, scores.Totals, scores.Summary, str]]:
        found = []
        for a in order:
            total = scores.totals_of(p for b, p in by_bot[a] if b in active)
            found.append((a, total, scores.summary(total), max(p.last_battle for _, p in by_bot[a])))
        return found

    _replace_tables(db, rumble_id, field, order, rows, summaries)


@dataclass(frozen=True)
class _Played:
    """Some bots' played pairings as arrays, in (bot, opponent) id order: bot ``a`` against bot ``b``,
    their ``n`` battles, the running means and the latest battle's time (ms)."""

    a: np.ndarray
    b: np.ndarray
    n: np.ndarray
    aps: np.ndarray
    aps_m2: np.ndarray
    survival: np.ndarray
    last_ms: np.ndarray


def played_blocks(table: compiled_replay.Pairings, chosen: np.ndarray | None = None) -> Iterator[_Played]:
    """A compiled replay's played pairings (those ``chosen``, a mask over its rows, if given),
    WRITE_BOTS bots at a time in bot-id order: each block's arrays take a few MB (the whole
    rumble's at once, 1.4 M pairings at 1,200 bots, a hundred)."""
    bot_of = bots_of_rows(table)
    by_id = np.argsort(bot_of[: len(table.row)])  # rows in bot-id order
    for first in range(0, len(by_id), WRITE_BOTS):
        rows = by_id[first : first + WRITE_BOTS]
        wanted = table.battles[np.ix_(rows, by_id)] > 0
        if chosen is not None:
            wanted &= chosen[np.ix_(rows, by_id)]
        r, s = np.nonzero(wanted)  # played pairings in (bot, opponent) order
        r, s = rows[r], by_id[s]
        yield _Played(
            bot_of[r],
            bot_of[s],
            table.battles[r, s],
            table.means[0, r, s],
            table.means[1, r, s],
            table.means[2, r, s],
            table.last_ms[r, s],
        )


def _write_compiled(db: Store, replay: Replay, min_battles: int) -> None:
    """``_write`` for a compiled replay, from its pairing arrays: the same rows, computed in numpy
    (``scores.totals_by_group``, ``priority.pairing_priorities``) rather than pairing by pairing,
    a block of bots at a time (``played_blocks``)."""
    table, field, rumble_id = replay.arrays, replay.field, replay.rumble_id
    if table is None:
        raise ValueError("not a compiled replay")
    held = priority_queue.held_pairs(db, rumble_id)  # queued or recently handed out: kept out of the index

    def rows() -> Iterator[tuple]:
        for p in played_blocks(table):
            for row in pairing_rows(p, held, min_battles):
                yield (rumble_id, *row)

    def summaries(active: set[int]) -> list[tuple[int, scores.Totals, scores.Summary, str]]:
        return summaries_of(table, active)

    _replace_tables(db, rumble_id, field, bots_with_pairings(table), rows(), summaries)


def pairing_rows(
    p: _Played, held: set[tuple[int, int]], min_battles: int
) -> Iterator[tuple[int, int, int, float, float, float, str, float | None]]:
    """The pairing rows of a block (bot, opponent, battles, APS, its M2, survival, last battle as
    stored, priority): the priority only once per pair (bot < opponent) and not for the pairs
    ``held`` (queued or recently handed out: kept out of the index)."""
    ranks = priority.pairing_priorities(p.n, p.aps, p.aps_m2, min_battles).tolist()
    a, b = p.a.tolist(), p.b.tolist()
    indexed = [x < y and (x, y) not in held for x, y in zip(a, b)]
    yield from zip(
        a,
        b,
        p.n.tolist(),
        p.aps.tolist(),
        p.aps_m2.tolist(),
        p.survival.tolist(),
        times_as_stored(p.last_ms),
        [rank if keep else None for rank, keep in zip(ranks, indexed)],
    )


def bots_of_rows(table: compiled_replay.Pairings) -> np.ndarray:
    """The bot id of each row of a compiled replay's arrays (0 for a row no bot has yet)."""
    bot_of = np.zeros(len(table.battles), dtype=np.int64)
    bot_of[list(table.row.values())] = list(table.row.keys())
    return bot_of


def summaries_of(
    table: compiled_replay.Pairings, active: set[int]
) -> list[tuple[int, scores.Totals, scores.Summary, str]]:
    """The summary rows of the bots with pairings, in id order, over their pairings against ``active``."""
    live_ids = np.fromiter(active, dtype=np.int64, count=len(active))
    return [found for p in played_blocks(table) if len(p.a) for found in _summaries(p, live_ids)]


def bots_with_pairings(table: compiled_replay.Pairings) -> list[int]:
    """The bots of a compiled replay that played a pairing, in id order."""
    in_order = sorted(table.row)
    played = np.asarray((table.battles[[table.row[bot] for bot in in_order]] > 0).any(axis=1))
    return [bot for bot, yes in zip(in_order, played.tolist()) if yes]


def _summaries(p: _Played, live_ids: np.ndarray) -> list[tuple[int, scores.Totals, scores.Summary, str]]:
    """The summary rows of the bots of ``p`` (over their pairings against ``live_ids``)."""
    order, starts = np.unique(p.a, return_index=True)  # the bots with pairings, and where each one's begin
    last = times_as_stored(np.maximum.reduceat(p.last_ms, starts))
    live = np.isin(p.b, live_ids)
    group = np.searchsorted(order, p.a[live])
    totals = scores.totals_by_group(group, p.n[live], p.aps[live], p.aps_m2[live], p.survival[live], len(order))
    return [(bot, t, scores.summary(t), when) for bot, t, when in zip(order.tolist(), totals, last)]


def times_as_stored(ms: np.ndarray) -> list[str]:
    """Times in ms since 1970 as the store writes them, "YYYY-MM-DD HH:MM:SS.mmm"."""
    return time_texts(ms).tolist()


def time_texts(ms: np.ndarray) -> np.ndarray:
    """``times_as_stored`` as a NumPy array of strings: numpy's ISO text with the T between date and
    time made a space in place (a third of the time of a Python string operation each)."""
    texts = np.datetime_as_string(ms.astype("datetime64[ms]"), unit="ms")
    if len(texts):
        texts.view(np.uint32).reshape(len(texts), -1)[:, 10] = ord(" ")  # one UCS-4 code point a character
    return texts


def _replace_tables(
    db: Store,
    rumble_id: int,
    field: Field,
    order: list[int],
    pairing_rows: Iterable[tuple],
    summaries: Callable[[set[int]], list[tuple[int, scores.Totals, scores.Summary, str]]],
) -> None:
    """Write the pairings, summaries (of the bots with pairings, in ``order``) and ratings."""
    pairings.clear_rumble(db, rumble_id)
    pairings.put_pairings(db, pairing_rows)
    active = {bot for bot in field.ids if field.active[field.position[bot]]}
    # Battles revive bots without an event, so after a rollback the replay may see a bot retired
    # that the participants table still has active: the replay decides.
    bots.sync_active(db, rumble_id, {bot: bot in active for bot in field.ids}, utc_now())
    missing_pairings.refill(db, rumble_id)
    pairings.put_totals(db, rumble_id, summaries(active))
    rating_rows.clear_ratings(db, rumble_id)
    rated = [(bot, field.ratings(bot)) for bot in order]  # a melee bot whose battles are all still open has none yet
    rating_rows.put_ratings(
        db, rumble_id, [(bot, r) for bot, r in rated if r.rated_at == r.rated_at]
    )  # NaN: never rated
    rating_rows.bump_generation(db, rumble_id)
    fields.forget(db, rumble_id)
    uploader_sums.refill(db, rumble_id)  # the uploader statistics' sums, from the log as it stands
