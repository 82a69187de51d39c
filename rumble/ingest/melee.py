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
- *prioritized*: it holds the 17 pairs of a whole prioritized battle: 10 bots, two of which are
  each paired with all nine others, every pair holding one of the two, and those two are not the
  battle's two best scores (``_prioritized_complete``). The first 17 pairs of an ordinary 45-pair
  battle (the client sends them in ranking order) are exactly the two best bots' pairs, so a
  prioritized battle whose chosen two finished first and second cannot be told from one and waits
  for the timeout;
- *timeout*: ``TIMEOUT_S`` after the battle's last pair was received, checked whenever a pair
  arrives in the rumble (from anyone) and by the server's schedule every minute (``sweep``). This
  closes those prioritized battles and the division copies (only the pairs of bots small enough).
  A sweep depends on the clock, so when it closes a battle it is recorded (``melee_sweeps``, after
  which battle it ran and when) and a rebuild replays it in place.

Otherwise the shape of a battle cannot say it is complete: a division's battle of k bots looks like
a bigger one still arriving. Nor can "the client has moved on to its next battle" close it: two
clients under one user name interleave.

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
arrive in, within a battle or interleaved with other battles, does not matter; the tests shuffle
them.

**Online equals rebuild.** Every decision depends only on the log rows in log order (client times,
receive times, figures) and the recorded sweeps, never on the clock at rebuild time, so a rebuild
(rumble.maintenance.rebuild with ``Replay``, which replays the log and the sweeps in order through the same
``add_pair`` and ``_timeouts``, each pair's pairings recorded first as on upload) reproduces every
reassembled battle and rating bit for bit.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timedelta

from rumble.ingest import fields
from rumble.ratings import melee_step, weng_lin, xonstat
from rumble.ratings.online import Field, seconds
from rumble.store import Store, format_time, melee_battles, rating_rows, write
from rumble.store.melee_battles import Figures, MeleeBattle, MeleeRating, PairRow

WINDOW_MS = 1_000
TIMEOUT_S = 300  # the client uploads a battle's pairs within seconds; a retry comes an iteration later
STOCK_MELEE_BOTS = 10


def add_pair(db: Store, rumble_id: int, pair: PairRow, field: Field, ratings: bool = True) -> list[int]:
    """Gather one logged pair into its battle, closing and rating the battles it ends; returns the
    ids of the battles rated (caller holds the transaction). ``field``: the rumble's ratings field,
    its pairings already holding this pair; a closed battle's bots are rated in it once each, and
    their rows of the ratings table written unless ``ratings`` is False (a rebuild writes them all)."""
    rated = _timeouts(db, rumble_id, pair.received_at, pair.id, field, ratings)
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
    elif _prioritized_complete(figures, pairs):
        rated.append(_close(db, rumble_id, target, "prioritized", pair.id, field, ratings))
    return rated


def _timeouts(
    db: Store, rumble_id: int, now: str, after_battle_id: int, field: Field, ratings: bool = True
) -> list[int]:
    """Close and rate, oldest first, the open battles whose last pair came ``TIMEOUT_S`` before ``now``."""
    return [
        _close(db, rumble_id, melee_id, "timeout", after_battle_id, field, ratings)
        for melee_id in melee_battles.stale_battles(db, rumble_id, _cutoff(now))
    ]


def sweep(db: Store, rumble_id: int, now: str) -> list[int]:
    """The schedule's timeout check at ``now`` (caller holds the transaction): close the battles
    whose time is up, recording the sweep if it closed any; returns the ids rated.

    The ratings it changes come with no new battle in the log, which is what the other server
    workers watch to catch their copies up (rumble.ingest.fields), so it bumps the rumble's generation:
    they reload the rumble at their next write (rare: a battle normally closes when complete, or
    at the next upload to its rumble)."""
    if not melee_battles.stale_battles(db, rumble_id, _cutoff(now)):
        return []
    copy = fields.current(db, rumble_id)
    rated = _timeouts(db, rumble_id, now, melee_battles.record_sweep(db, rumble_id, now), copy.field)
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


def _prioritized_complete(figures: dict[int, Figures], pairs: set[frozenset[int]]) -> bool:
    """True for the 17 pairs of a whole prioritized battle (protocol.md 7.5): 10 bots, and two *hub*
    bots each paired with all 9 others, every pair holding a hub. Unless the hubs are the battle's
    two best scores: an ordinary battle's pairs come in ranking order (``fname`` outranks ``sname``),
    so its first 17 pairs are exactly the two best bots' pairs, and such a battle is left to
    complete (or time out). A prioritized battle whose two chosen bots finished first and second is
    therefore still rated on the timeout, as every division copy is."""
    n = len(figures)
    if n != STOCK_MELEE_BOTS or len(pairs) != 2 * n - 3:
        return False
    degree = {bot: 0 for bot in figures}
    for pair in pairs:
        for bot in pair:
            degree[bot] += 1
    hubs = {bot for bot, d in degree.items() if d == n - 1}
    if len(hubs) != 2 or not all(pair & hubs for pair in pairs):
        return False
    best_other = max(figures[bot][0] for bot in figures if bot not in hubs)
    return any(figures[hub][0] < best_other for hub in hubs)  # the hubs are not the two best scores


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
    it, ``pair`` gathers it (after its pairings are in ``field``, as on upload), and ``finish`` runs
    the sweeps recorded after the last pair. Every rating goes into ``field`` as online; the
    ratings table is left to the rebuild, which writes the field whole (``ratings=False``)."""

    def __init__(self, db: Store, rumble_id: int, field: Field):
        self.db, self.rumble_id, self.field = db, rumble_id, field
        melee_battles.clear_rumble(db, rumble_id)
        self.sweep_id = 0  # the last sweep replayed
        self.sweeps: list[tuple[int, int, str]] = []
        self.done = self.rated = 0
        self.pairs: Iterator[tuple[str, PairRow]] = iter(())

    def begin(self, after: int, up_to: int, states: tuple[str, ...]) -> None:
        """Go on with the pairs logged in (after, up_to] in ``states`` and the sweeps recorded since the last one replayed."""
        self.sweeps = melee_battles.sweeps_in_order(self.db, self.rumble_id, self.sweep_id)
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
                self.rated += len(add_pair(self.db, self.rumble_id, pair, self.field, ratings=False))
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
