"""Melee battles put back together from their pair uploads, and rated once each as whole battles.

The client uploads one melee battle of n bots as up to n(n-1)/2 separate pair results (protocol.md
7.5), each carrying both bots' whole-battle figures. Every pair is logged and scored as a pairing
(rumble.ingest.apply); this module also gathers the pairs of one battle, per rumble (each division is its
own rumble and gets its own copy of the battle), and rates the battle once it is closed:
Weng-Lin (rumble/ratings/weng_lin.py) and the multi-bot XonStat Elo (rumble/ratings/xonstat.py).

**Which pairs are one battle.** A pair belongs to an open battle of the same rumble when it has the
same uploader, the battle's client times (``time=``) with the pair's span at most ``WINDOW_MS`` (the
client stamps each pair as it writes its results file, all pairs of a battle within a few ms; two
battles of one client are a whole battle's length apart), it is not a pair the battle already has,
and each of its bots is either new to the battle or shows the same score, bullet damage and firsts
as before (a bot's figures are the same in every pair of its battle, and two battles almost never
give a bot the same three numbers). Otherwise it opens a new battle, whose id is the pair's log id.
Two clients run under one user name interleave their uploads; they are told apart like this too.

**When a battle is closed and rated.** Whichever comes first:

- *complete*: it holds all pairs of ``STOCK_MELEE_BOTS`` bots (45 pairs of 10, the stock MELEEBOTS);
- *prioritized*: it holds the 17 pairs of a whole prioritized battle: 10 bots, two of which (the
  chosen two) are each paired with all nine others, every pair holding one of the two (``_hubs``),
  and those two are not the battle's two best scores. The first 17 pairs of an ordinary 45-pair
  battle (the client sends them in ranking order) are exactly its two best bots' pairs, so when the
  chosen two finished first and second the 17th pair cannot tell the battle is whole. The
  uploader's next pair to the rumble can (an ordinary battle's 18th follows its 17th), together
  with the priority queue, since a second client under the same user name interleaves its
  uploads: the battle is closed when that next pair is not one of its own and the server had
  handed those two to the uploader as a priority pair before it was fought (``_moved_on``). The
  queue is not part of the log, so such a close is recorded (``melee_priority_closes``) and a
  rebuild closes the battle at the same pair again;
- *prioritized*, a division's copy (``_whole_copies``): the client sends each pair to the general
  game, then to each division both its bots are small enough for, before the next pair (protocol.md
  7.2). Once the general copy of a battle is closed as prioritized (whole), the division copy of
  each of its pairs but the last has arrived or never will; the copy is whole when it holds the
  last one too, or that pair has a bot known not small enough (a pair of it with a bot of the
  division was sent to the general game only). Checked as each pair of the rumble arrives, and by
  the schedule's sweep, so a copy whose own last pair came before the general copy's last is rated
  at the next pair to its rumble (from anyone) or within a minute;
- *timeout*: ``TIMEOUT_S`` after the battle's last pair was received, checked whenever a pair
  arrives in the rumble (from anyone) and by the server's schedule every minute (``sweep``). This
  closes what the rules above cannot: the division copies of ordinary battles (a division's battle
  of k bots looks like a bigger one still arriving, and the server has no codesizes), a prioritized
  battle's division copy whose general copy's last pair has a bot that met no bot of the division
  in the other pairs sent (a codesize decides whether that pair comes), a prioritized battle of the
  two best scores that the server did not hand out (the client also prioritizes bots with few
  battles in its ratings files, protocol.md 8), whose priority entry was forgotten before the
  battle arrived (PRIORITY_HOLD_MINUTES), or after which its uploader sent nothing more to the
  rumble within the timeout (the last battle of an upload), and battles with lost pairs.
  A sweep depends on the clock, so when it closes a battle it is recorded (``melee_sweeps``, after
  which battle of the log it ran and when) and a rebuild replays it in place.

The uploader's next pair alone cannot close a battle: two clients under one user name interleave.
Two limits remain. An ordinary battle in which two bots the uploader was handed as a priority
pair finish first and second is closed early only if another client under its user name sends a
pair between its 17th pair and its 18th. And a division copy is read in the client's order: a
division pair whose upload fails and is retried an iteration later comes late, as it does after a
timeout.

**What rating a battle does.** Weng-Lin and the per-battle XonStat Elo (the melee tables), and one
step of every 1v1 rating for each of its bots (``rumble.ratings.melee_step``: Elo, Glicko,
Glicko-2, Rank Points, XonStat), in the rumble's field, whose pairings already hold every pair that
arrived. The pair uploads themselves rate nothing.

**Missing pairs: rate what is known.** A closed battle is rated with every bot seen in any of its
pairs, ranked by the whole-battle scores the pairs carry. Each pair names two bots with their
whole-battle scores, so the ranking of the bots seen is exact whatever pairs are missing; only a bot
none of whose pairs arrived is left out. (A prioritized battle's 17 pairs name all 10 bots.)

**Exactly once.** A battle is rated only when it is closed, and a closed battle is never rated
again: a pair arriving after its battle was closed (a retry of a failed upload, or a slow second
client with the same user name) is attached to that battle as *late* and rates nothing. A retried
pair that is identical to a logged one is not even logged (the log's identity). The order pairs
arrive in, within a battle or interleaved with other battles, does not change which battles they
make up; the tests shuffle them. (It changes when a division copy is known whole, above.)

**Online equals rebuild.** Every decision depends only on the log rows in log order (client times,
receive times, figures), the recorded sweeps and priority closes, and, for a division's copy, the
general rumble's battles closed before that point of the log (read from its own tables, which a
rebuild of it reproduces), never on the clock at rebuild time, so a rebuild
(rumble.maintenance.rebuild with ``Replay``, which replays the log and the sweeps in order through the same
``add_pair`` and ``_timeouts``, each pair's pairings recorded first as on upload) reproduces every
reassembled battle and rating bit for bit.
"""

from __future__ import annotations

from collections.abc import Container, Iterator
from datetime import datetime, timedelta

from rumble.ingest import fields
from rumble.ratings import melee_step, weng_lin, xonstat
from rumble.ratings.online import Field, seconds
from rumble.store import Store, format_time, melee_battles, priority_queue, rating_rows, write
from rumble.store.melee_battles import Figures, MeleeBattle, MeleeRating, PairRow

WINDOW_MS = 1_000
TIMEOUT_S = 300  # the client uploads a battle's pairs within seconds; a retry comes an iteration later
STOCK_MELEE_BOTS = 10


def add_pair(
    db: Store,
    rumble_id: int,
    pair: PairRow,
    field: Field,
    ratings: bool = True,
    handed_out: Container[tuple[int, int]] | None = None,
) -> list[int]:
    """Gather one logged pair into its battle, closing and rating the battles it ends; returns the
    ids of the battles rated (caller holds the transaction). ``field``: the rumble's ratings field,
    its pairings already holding this pair; a closed battle's bots are rated in it once each, and
    their rows of the ratings table written unless ``ratings`` is False (a rebuild writes them all).
    ``handed_out``: for a rebuild, the (battle, pair) recorded as closed on a priority pair handed
    out (``_moved_on``); None on upload, which asks the priority queue and records."""
    rated = _timeouts(db, rumble_id, pair.received_at, pair.id, field, ratings)
    rated += _moved_on(db, rumble_id, pair, field, ratings, handed_out)
    open_battles = melee_battles.open_battles(db, rumble_id, pair.uploader, pair.client_time, WINDOW_MS)
    gathered: Gathered | None = next((found for b in open_battles if (found := _fits(db, b, pair)) is not None), None)
    if gathered is None:
        late = [
            b
            for b in melee_battles.rated_battles_near(db, rumble_id, pair.uploader, pair.client_time, WINDOW_MS)
            if _fits(db, b, pair) is not None
        ]
        if late:
            melee_battles.add_pair(db, late[0].id, pair, late=True)
            return rated
        gathered = (pair.id, {}, set())
        melee_battles.create_battle(db, pair.id, rumble_id, pair.uploader, pair.client_time, pair.received_at)
    target, figures, pairs = gathered
    melee_battles.add_pair(db, target, pair, late=False)
    # The battle's bots and pairs as its rows now hold them: read once by _fits, this pair added.
    figures.setdefault(pair.first_id, pair.first)
    figures.setdefault(pair.second_id, pair.second)
    pairs.add(frozenset((pair.first_id, pair.second_id)))
    if _complete(figures, pairs):
        rated.append(_close(db, rumble_id, target, "complete", pair.id, field, ratings))
    elif (hubs := _hubs(figures, pairs)) is not None and not _first_and_second(figures, hubs):
        rated.append(_close(db, rumble_id, target, "prioritized", pair.id, field, ratings))
    elif _whole_copies(db, rumble_id, pair.id, only=target):  # a division's copy of a whole prioritized battle
        rated.append(_close(db, rumble_id, target, "prioritized", pair.id, field, ratings))
    return rated


def _timeouts(
    db: Store, rumble_id: int, now: str, after_battle_id: int, field: Field, ratings: bool = True
) -> list[int]:
    """Close and rate the open battles whose last pair came ``TIMEOUT_S`` before ``now``, oldest
    first, then the division copies known whole once the log up to ``after_battle_id`` is in
    (``_whole_copies``), oldest first."""
    rated = [
        _close(db, rumble_id, melee_id, "timeout", after_battle_id, field, ratings)
        for melee_id in melee_battles.stale_battles(db, rumble_id, _cutoff(now))
    ]
    return rated + [
        _close(db, rumble_id, melee_id, "prioritized", after_battle_id, field, ratings)
        for melee_id in _whole_copies(db, rumble_id, after_battle_id)
    ]


def sweep(db: Store, rumble_id: int, now: str) -> list[int]:
    """The schedule's check at ``now`` (caller holds the transaction): close the battles whose time
    is up and the division copies known whole (``_timeouts``), recording the sweep, after the log's
    newest battle, if it closed any; returns the ids rated.

    The ratings it changes come with no new battle in the log, which is what the other server
    workers watch to catch their copies up (rumble.ingest.fields), so it bumps the rumble's generation:
    they reload the rumble at their next write (rare: a battle normally closes when complete, or
    at the next upload to its rumble)."""
    after = melee_battles.newest_battle(db)
    if not melee_battles.stale_battles(db, rumble_id, _cutoff(now)) and not _whole_copies(db, rumble_id, after):
        return []
    copy = fields.current(db, rumble_id)
    melee_battles.record_sweep(db, rumble_id, now, after)
    rated = _timeouts(db, rumble_id, now, after, copy.field)
    rating_rows.bump_generation(db, rumble_id)
    copy.seen = rating_rows.version(db, rumble_id)  # this worker's copy holds the new ratings already
    return rated


def sweep_all(db: Store, now: str) -> int:
    """``sweep`` every melee rumble, one transaction each; returns the battles rated."""
    rated = 0
    for rumble_id in melee_battles.melee_rumbles(db):
        with write(db):
            rated += len(sweep(db, rumble_id, now))
    return rated


def _cutoff(received_at: str) -> str:
    return format_time(datetime.fromisoformat(received_at) - timedelta(seconds=TIMEOUT_S))


Gathered = tuple[int, dict[int, Figures], set[frozenset[int]]]  # a battle's id, its bots' figures, its pairs


def _fits(db: Store, battle: MeleeBattle, pair: PairRow) -> Gathered | None:
    """``battle`` as gathered so far if ``pair`` can be a pair of it (close in client time, new to
    it, its bots' figures consistent), else None."""
    if max(battle.last_time, pair.client_time) - min(battle.first_time, pair.client_time) > WINDOW_MS:
        return None
    pairs = melee_battles.pairs_of(db, battle.id)
    if frozenset((pair.first_id, pair.second_id)) in pairs:
        return None
    known = melee_battles.entries(db, battle.id)
    consistent = all(
        known.get(bot, figures) == figures
        for bot, figures in ((pair.first_id, pair.first), (pair.second_id, pair.second))
    )
    return (battle.id, known, pairs) if consistent else None


def _complete(figures: dict[int, Figures], pairs: set[frozenset[int]]) -> bool:
    """True for all 45 pairs of a battle of the stock 10 bots."""
    n = len(figures)
    return n == STOCK_MELEE_BOTS and len(pairs) == n * (n - 1) // 2


def _hubs(figures: dict[int, Figures], pairs: set[frozenset[int]]) -> frozenset[int] | None:
    """The two chosen bots if these are the 17 pairs of a whole prioritized battle (protocol.md 7.5):
    10 bots, and two *hub* bots each paired with all 9 others, every pair holding a hub; else None."""
    n = len(figures)
    if n != STOCK_MELEE_BOTS or len(pairs) != 2 * n - 3:
        return None
    degree = {bot: 0 for bot in figures}
    for pair in pairs:
        for bot in pair:
            degree[bot] += 1
    hubs = frozenset(bot for bot, d in degree.items() if d == n - 1)
    if len(hubs) != 2 or not all(pair & hubs for pair in pairs):
        return None
    return hubs


def _first_and_second(figures: dict[int, Figures], hubs: frozenset[int]) -> bool:
    """True if the hubs hold the battle's two best scores. An ordinary battle's pairs come in
    ranking order (``fname`` outranks ``sname``), so its first 17 pairs are exactly its two best
    bots' pairs: such 17 pairs alone do not say the battle is whole (``_moved_on`` may)."""
    best_other = max(figures[bot][0] for bot in figures if bot not in hubs)
    return not any(figures[hub][0] < best_other for hub in hubs)


def _moved_on(
    db: Store,
    rumble_id: int,
    pair: PairRow,
    field: Field,
    ratings: bool,
    recorded: Container[tuple[int, int]] | None,
) -> list[int]:
    """Close and rate, oldest first, the uploader's open battles of 17 pairs whose two hubs are the
    two best scores (``_hubs``, ``_first_and_second``) that ``pair`` is not part of, when the
    server had handed those two to the uploader as a priority pair before the battle was fought.

    Such 17 pairs are either a whole prioritized battle of those two or the first 17 of an ordinary
    one, whose 18th pair the client sends right after the 17th (and its division copies): so the
    uploader's next pair to the rumble says which. That alone is not enough (a second client under
    the same user name interleaves its uploads), so the priority pair must also have been handed
    out to the uploader: a rumble of the family (the client plays the priority pairs of all four
    games, protocol.md 8) answered with [a,b] a pair the uploader sent there that opened a battle
    (rumble.ingest.decide) fought before this one, and has not forgotten that entry yet
    (PRIORITY_HOLD_MINUTES). On upload the queue is asked and each close recorded
    (``melee_priority_closes``: the queue is not part of the log); a rebuild (``recorded``: the
    (battle, pair) recorded) closes the same battles at the same pair again."""
    rated = []
    for battle in melee_battles.open_of_size(db, rumble_id, pair.uploader, 2 * STOCK_MELEE_BOTS - 3):
        figures, pairs = melee_battles.entries(db, battle.id), melee_battles.pairs_of(db, battle.id)
        hubs = _hubs(figures, pairs)
        if hubs is None or not _first_and_second(figures, hubs) or _fits(db, battle, pair) is not None:
            continue
        if recorded is not None:
            if (battle.id, pair.id) not in recorded:
                continue
        elif _handed_out(db, rumble_id, battle, hubs, pair.uploader):
            melee_battles.record_priority_close(db, rumble_id, battle.id, pair.id)
        else:
            continue
        rated.append(_close(db, rumble_id, battle.id, "prioritized", pair.id, field, ratings))
    return rated


def _handed_out(db: Store, rumble_id: int, battle: MeleeBattle, hubs: frozenset[int], uploader: str) -> bool:
    """Whether a rumble of the family handed the two ``hubs`` to ``uploader`` as a priority pair, in
    answer to a pair that opened a battle fought before ``battle``, and has not forgotten it yet."""
    a, b = sorted(hubs)
    return any(
        melee_battles.answered_upload(db, rid, uploader, when, battle.first_time) is not None
        for rid, when in priority_queue.handed_out(db, melee_battles.family_rumbles(db, rumble_id), a, b)
    )


def _whole_copies(db: Store, rumble_id: int, up_to: int, only: int | None = None) -> list[int]:
    """The open battles (or battle ``only``) of a division rumble that are whole division copies of a
    prioritized battle, once the log up to id ``up_to`` is in, oldest first.

    The client sends each pair to the general game and then to each division both its bots are
    small enough for, before the next pair (protocol.md 7.2). So once a battle's general copy is
    whole (rated as prioritized: every battle closed that way is whole), every division copy of
    its pairs but the last has arrived or never will, and a division copy (``_whole_copy``) is
    whole when that last pair is in it too, or is known not to be sent to the division."""
    general = melee_battles.general_rumble(db, rumble_id)
    if general is None:
        return []
    return [
        copy
        for copy, whole in melee_battles.prioritized_copies(db, rumble_id, general, up_to, only)
        if _whole_copy(db, copy, whole)
    ]


def _whole_copy(db: Store, melee_id: int, general_id: int) -> bool:
    """Whether division battle ``melee_id`` holds every pair the client sends it of the whole
    prioritized battle ``general_id`` of the general rumble, which it must match: the same figures
    for the same bots, and only pairs of that battle.

    A bot is small enough for the division if a pair of it is here; it is not if a pair of it with
    a bot that is was sent to the general game and not here (the division copy of every pair but
    the general copy's last was sent before that last one). The last pair comes here only if both
    its bots are small enough: here, or known not to come, the copy is whole. Otherwise (a bot of
    it met no bot of the division in any other pair sent, and a codesize the server does not have
    decides) the copy waits for the timeout."""
    mine = melee_battles.entries(db, melee_id)
    figures, sent = melee_battles.general_copy(db, general_id)
    got = melee_battles.pairs_of(db, melee_id)
    if not sent or any(figures.get(bot) != known for bot, known in mine.items()) or not got <= set(sent):
        return False
    last = sent[-1]
    if last in got:
        return True

    def too_big(bot: int) -> bool:
        return bot not in mine and any(
            bot in pair and pair != last and pair not in got and (pair - {bot}) <= mine.keys() for pair in sent
        )

    return any(too_big(bot) for bot in last)


def _close(
    db: Store, rumble_id: int, melee_id: int, closed_by: str, after_battle_id: int, field: Field, ratings: bool = True
) -> int:
    """Rate a battle with every bot seen in its pairs, and mark it rated: Weng-Lin and the per-battle
    XonStat Elo, and one step of every 1v1 rating in ``field`` (rumble.ratings.melee_step)."""
    melee_battles.close_battle(db, melee_id, closed_by, after_battle_id)
    bots = melee_battles.entries(db, melee_id)  # in bot-id order
    ids = list(bots)
    scores = [bots[bot][0] for bot in ids]
    now = seconds(melee_battles.battle_time(db, melee_id))
    known = melee_battles.ratings_of(db, rumble_id, ids)
    before = [known.get(bot) or MeleeRating(weng_lin.MU, weng_lin.SIGMA, float("nan"), 0, xonstat.START) for bot in ids]
    entered, skills = weng_lin.rate_battle(
        [weng_lin.Skill(r.mu, r.sigma, r.rated_at, r.battles) for r in before], scores, now
    )
    elo = xonstat.update_melee([r.xonstat for r in before], [r.battles for r in before], scores)
    ranks = weng_lin.ranks(scores)
    melee_battles.put_entry_ratings(
        db,
        melee_id,
        [
            (bot, rank, old.mu, sigma, new.mu, new.sigma, old.xonstat, x)
            for bot, rank, old, sigma, new, x in zip(ids, ranks, before, entered, skills, elo)
        ],
    )
    melee_battles.put_ratings(
        db,
        rumble_id,
        [(bot, MeleeRating(new.mu, new.sigma, new.rated_at, new.battles, x)) for bot, new, x in zip(ids, skills, elo)],
    )
    melee_step.rate_field(field, ids, scores, now)
    if ratings:
        rating_rows.put_ratings(db, rumble_id, [(bot, field.ratings(bot)) for bot in ids])
    return melee_id


def apply_logged(db: Store, rumble_id: int, battle_id: int, field: Field) -> list[int]:
    """``add_pair`` for a battle just appended to the log (the upload path)."""
    return add_pair(db, rumble_id, melee_battles.pair_row(db, battle_id), field)


class Replay:
    """A rebuild's pass over a melee rumble, in log order and resumable (rumble.maintenance.rebuild.advance):
    the reassembled battles are cleared (on a maintenance job's connection, its TEMP copies of the
    melee tables), then for each counted pair ``before_pair`` runs the recorded sweeps due before
    it, ``pair`` gathers it (after its pairings are in ``field``, as on upload; a battle closed
    online on a priority pair handed out closes at the pair recorded, ``_moved_on``), and
    ``finish`` runs the sweeps recorded after the last pair. Every rating goes into ``field`` as
    online; the ratings table is left to the rebuild, which writes the field whole (``ratings=False``)."""

    def __init__(self, db: Store, rumble_id: int, field: Field):
        self.db, self.rumble_id, self.field = db, rumble_id, field
        melee_battles.clear_rumble(db, rumble_id)
        self.sweep_id = 0  # the last sweep replayed
        self.sweeps: list[tuple[int, int, str]] = []
        self.done = self.rated = 0
        self.pairs: Iterator[tuple[str, PairRow]] = iter(())
        self.handed_out: set[tuple[int, int]] = set()  # (battle, pair) recorded as closed on a priority pair

    def begin(self, after: int, up_to: int, states: tuple[str, ...]) -> None:
        """Go on with the pairs logged in (after, up_to] in ``states`` and the sweeps recorded since the last one replayed."""
        self.sweeps = melee_battles.sweeps_in_order(self.db, self.rumble_id, self.sweep_id)
        self.handed_out |= melee_battles.priority_closes(self.db, self.rumble_id, after, up_to)
        self.done = 0
        self.pairs = melee_battles.iter_pairs(self.db, self.rumble_id, after=after, up_to=up_to, states=states)

    def before_pair(self, battle_id: int) -> None:
        while self.done < len(self.sweeps) and self.sweeps[self.done][1] < battle_id:
            self._sweep(*self.sweeps[self.done])

    def pair(self, battle_id: int) -> None:
        for (
            _,
            pair,
        ) in self.pairs:  # the same battles, in the same order, as the rebuild's log (it skips those that do not count)
            if pair.id == battle_id:
                self.rated += len(
                    add_pair(self.db, self.rumble_id, pair, self.field, ratings=False, handed_out=self.handed_out)
                )
                return
        raise RuntimeError(f"melee replay out of step: no pair for battle {battle_id}")

    def finish(self) -> int:
        """Run the remaining sweeps; returns the battles rated so far."""
        while self.done < len(self.sweeps):
            self._sweep(*self.sweeps[self.done])
        return self.rated

    def _sweep(self, sweep_id: int, after: int, swept_at: str) -> None:
        self.rated += len(_timeouts(self.db, self.rumble_id, swept_at, after, self.field, ratings=False))
        self.sweep_id = sweep_id
        self.done += 1
