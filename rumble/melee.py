"""Melee battles put back together from their pair uploads, and rated once each as whole battles.

The client uploads one melee battle of n bots as up to n(n-1)/2 separate pair results (protocol.md
7.5), each carrying both bots' whole-battle figures. Every pair is logged and scored as a pairing
(rumble.ingest); this module also gathers the pairs of one battle, per rumble (each division is its
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
- *timeout*: ``TIMEOUT_S`` after the battle's last pair was received, checked whenever a pair
  arrives in the rumble (from anyone) and by the server's schedule every minute (``sweep``). This
  closes prioritized battles (17 pairs) and the division copies (only the pairs of bots small
  enough). A sweep depends on the clock, so when it closes a battle it is recorded
  (``melee_sweeps``, after which battle it ran and when) and a rebuild replays it in place.

The shape of a battle cannot say it is complete otherwise: the first 17 pairs of an ordinary
45-pair battle (the client sends them in ranking order) look exactly like a complete prioritized
battle, and a division's battle of k bots like a bigger one still arriving. Nor can "the client
has moved on to its next battle" close it: two clients under one user name interleave.

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
receive times, figures) and the recorded sweeps, never on the clock at rebuild time, so ``rebuild``
(which replays the log and the sweeps in order through the same ``add_pair`` and ``_timeouts``)
reproduces every reassembled battle and rating bit for bit.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta

from rumble.ratings import weng_lin, xonstat
from rumble.ratings.online import seconds
from rumble.store import Store, format_time, write
from rumble.store import melee as rows
from rumble.store.melee import MeleeBattle, MeleeRating, PairRow

WINDOW_MS = 1_000
TIMEOUT_S = 300  # the client uploads a battle's pairs within seconds; a retry comes an iteration later
STOCK_MELEE_BOTS = 10


def add_pair(db: Store, rumble_id: int, pair: PairRow) -> list[int]:
    """Gather one logged pair into its battle, closing and rating the battles it ends; returns the
    ids of the battles rated (caller holds the transaction)."""
    rated = _timeouts(db, rumble_id, pair.received_at, pair.id)
    target = next((b.id for b in rows.open_battles(db, rumble_id, pair.uploader) if _fits(db, b, pair)), None)
    if target is None:
        late = [b for b in rows.rated_battles_near(db, rumble_id, pair.uploader, pair.client_time, WINDOW_MS) if _fits(db, b, pair)]
        if late:
            rows.add_pair(db, late[0].id, pair, late=True)
            return rated
        target = pair.id
        rows.create_battle(db, target, rumble_id, pair.uploader, pair.client_time, pair.received_at)
    rows.add_pair(db, target, pair, late=False)
    if _complete(db, target):
        rated.append(_close(db, rumble_id, target, "complete", pair.id))
    return rated


def _timeouts(db: Store, rumble_id: int, now: str, after_battle_id: int) -> list[int]:
    """Close and rate, oldest first, the open battles whose last pair came ``TIMEOUT_S`` before ``now``."""
    return [_close(db, rumble_id, melee_id, "timeout", after_battle_id) for melee_id in rows.stale_battles(db, rumble_id, _cutoff(now))]


def sweep(db: Store, rumble_id: int, now: str) -> list[int]:
    """The schedule's timeout check at ``now`` (caller holds the transaction): close the battles
    whose time is up, recording the sweep if it closed any; returns the ids rated."""
    if not rows.stale_battles(db, rumble_id, _cutoff(now)):
        return []
    return _timeouts(db, rumble_id, now, rows.record_sweep(db, rumble_id, now))


def sweep_all(db: Store, now: str) -> int:
    """``sweep`` every melee rumble, one transaction each; returns the battles rated."""
    rated = 0
    for rumble_id in rows.melee_rumbles(db):
        with write(db):
            rated += len(sweep(db, rumble_id, now))
    return rated


def _cutoff(received_at: str) -> str:
    return format_time(datetime.fromisoformat(received_at) - timedelta(seconds=TIMEOUT_S))


def _fits(db: Store, battle: MeleeBattle, pair: PairRow) -> bool:
    """True if ``pair`` can be a pair of ``battle``: close in client time, new to it, its bots' figures consistent."""
    if max(battle.last_time, pair.client_time) - min(battle.first_time, pair.client_time) > WINDOW_MS:
        return False
    if frozenset((pair.first_id, pair.second_id)) in rows.pairs_of(db, battle.id):
        return False
    known = rows.entries(db, battle.id)
    return all(known.get(bot, figures) == figures for bot, figures in ((pair.first_id, pair.first), (pair.second_id, pair.second)))


def _complete(db: Store, melee_id: int) -> bool:
    n = len(rows.entries(db, melee_id))
    return n == STOCK_MELEE_BOTS and len(rows.pairs_of(db, melee_id)) == n * (n - 1) // 2


def _close(db: Store, rumble_id: int, melee_id: int, closed_by: str, after_battle_id: int) -> int:
    """Rate a battle with every bot seen in its pairs, and mark it rated."""
    rows.close_battle(db, melee_id, closed_by, after_battle_id)
    bots = rows.entries(db, melee_id)  # in bot-id order
    ids = list(bots)
    scores = [bots[bot][0] for bot in ids]
    now = seconds(rows.battle_time(db, melee_id))
    known = rows.ratings_of(db, rumble_id, ids)
    before = [known.get(bot) or MeleeRating(weng_lin.MU, weng_lin.SIGMA, float("nan"), 0, xonstat.START) for bot in ids]
    entered, skills = weng_lin.rate_battle([weng_lin.Skill(r.mu, r.sigma, r.rated_at, r.battles) for r in before], scores, now)
    elo = xonstat.update_melee([r.xonstat for r in before], [r.battles for r in before], scores)
    ranks = weng_lin.ranks(scores)
    rows.put_entry_ratings(db, melee_id, [
        (bot, rank, old.mu, sigma, new.mu, new.sigma, old.xonstat, x)
        for bot, rank, old, sigma, new, x in zip(ids, ranks, before, entered, skills, elo)
    ])  # fmt: skip
    rows.put_ratings(db, rumble_id, [
        (bot, MeleeRating(new.mu, new.sigma, new.rated_at, new.battles, x)) for bot, new, x in zip(ids, skills, elo)
    ])  # fmt: skip
    return melee_id


def apply_logged(db: Store, rumble_id: int, battle_id: int) -> list[int]:
    """``add_pair`` for a battle just appended to the log (the upload path)."""
    return add_pair(db, rumble_id, rows.pair_row(db, battle_id))


def rebuild(db: Store, rumble_id: int) -> int:
    """Recompute a rumble's reassembled battles and melee ratings from its log and recorded sweeps
    (caller holds the transaction); returns the number of battles rated."""
    rows.clear_rumble(db, rumble_id)
    return replay(db, rumble_id)[0]


def replay(db: Store, rumble_id: int, after: int = 0, up_to: int | None = None, sweeps_after: int = 0,
           counts: Callable[[str, int], bool] | None = None) -> tuple[int, int]:  # fmt: skip
    """Gather the rumble's pairs with log ids in (after, up_to] and replay the sweeps recorded after
    sweep ``sweeps_after``, in order (a rebuild goes on from where it was); ``counts(state, id)``
    says which pairs count (default: those in state 'ok'). Returns (battles rated, last sweep id)."""
    sweeps = rows.sweeps_in_order(db, rumble_id, sweeps_after)
    states = ("ok",) if counts is None else ("ok", "flagged", "removed")
    rated = done = 0
    for state, pair in rows.iter_pairs(db, rumble_id, after=after, up_to=up_to, states=states):
        if counts is not None and not counts(state, pair.id):
            continue
        while done < len(sweeps) and sweeps[done][1] < pair.id:
            rated += len(_timeouts(db, rumble_id, sweeps[done][2], sweeps[done][1]))
            done += 1
        rated += len(add_pair(db, rumble_id, pair))
    for _, after_id, swept_at in sweeps[done:]:
        rated += len(_timeouts(db, rumble_id, swept_at, after_id))
    return rated, sweeps[-1][0] if sweeps else sweeps_after
