"""``rumble rebuild``: a rumble's derived tables recomputed from its battle log and events.

The log's battles and the participant events (retirements, restorations) are replayed in the
order they happened, through the same pure functions as the upload path: ``scores.score_battle``
for the pairings, ``ingest.rate`` (``online.rate_battle``) for the ratings, and the exact
``scores`` totals for the summaries. In a melee rumble the pairs only record their pairings, and
``melee.Replay`` reassembles the whole battles and rates each once as it closes (with the recorded
sweeps in place), as the upload path does. Each rating depends on who was active and on every pairing
at the moment of its battle, which is why the events are replayed in place, not just their end
state. The result equals the online tables bit for bit.
"""

from __future__ import annotations

from collections.abc import Callable
from operator import itemgetter

from rumble import fields, melee, priority
from rumble.ingest import battle_shares, rate, record_pairings
from rumble.rankings import scores
from rumble.rankings.scores import Pairing
from rumble.ratings.online import Field
from rumble.store import Store, bots, pairings, utc_now
from rumble.store import battles as battle_log
from rumble.store import melee as melee_rows
from rumble.store import priority as queue
from rumble.store import ratings as rating_rows
from rumble.store.rumbles import by_survival
from rumble.store.rumbles import rumble_id as find_rumble_id

PROGRESS_EVERY = 10_000


def rebuild_rumble(db: Store, game: str, rounds: int, min_battles: int, progress: Callable[[int], None] | None = None) -> int:
    """Recompute a rumble's pairings, summaries and ratings (caller holds the transaction).

    Returns the number of battles replayed; ``progress(n)`` is called as battles are replayed.
    """
    rumble_id = find_rumble_id(db, game)
    if rumble_id is None:
        raise LookupError(f"rumble {game!r} is not in the database")
    field = Field()
    for bot in pairings.all_participant_ids(db, rumble_id):  # in id order, as online
        field.add(bot)
    state: dict[tuple[int, int], Pairing] = {}
    events = rating_rows.events_in_order(db, rumble_id)
    next_event = 0
    replayed = 0
    survival = by_survival(db, rumble_id)  # twinduel: percentages from rounds won
    # A melee rumble rates whole battles, as they close, in log order with the recorded sweeps
    replay = melee.Replay(db, rumble_id, field) if melee_rows.is_melee(db, rumble_id) else None
    for logged in battle_log.iter_scored_battles(db, rumble_id):
        while next_event < len(events) and events[next_event][3] < logged.id:
            _, bot, active, _ = events[next_event]
            field.set_active(bot, active)
            next_event += 1
        a, b = logged.first_id, logged.second_id
        shares = battle_shares(logged.first_score, logged.second_score, logged.first_firsts, logged.second_firsts, survival)
        state[a, b], state[b, a] = scores.score_battle(
            state.get((a, b)), state.get((b, a)), shares, (logged.first_firsts, logged.second_firsts), rounds, logged.received_at,
        )  # fmt: skip
        if replay is not None:
            replay.before_pair(logged.id)
            record_pairings(field, a, b, state[a, b], state[b, a])
            replay.pair(logged.id)
        else:
            rate(field, a, b, state[a, b], state[b, a], scores.battle_percent(*shares) / 100.0, logged.received_at)
        replayed += 1
        if progress and replayed % PROGRESS_EVERY == 0:
            progress(PROGRESS_EVERY)
    if replay is not None:  # sweeps after the last pair, before the retirements after it (as they happened)
        replay.finish()
    for _, bot, active, _ in events[next_event:]:
        field.set_active(bot, active)
    if progress:
        progress(replayed % PROGRESS_EVERY)
    _write(db, rumble_id, state, field, min_battles)
    return replayed


def _write(db: Store, rumble_id: int, state: dict[tuple[int, int], Pairing], field: Field, min_battles: int) -> None:
    """Replace the rumble's pairings, summaries and ratings with the replayed ones."""
    held = queue.held_pairs(db, rumble_id)  # queued or recently handed out: kept out of the index
    by_bot: dict[int, list[tuple[int, Pairing]]] = {}  # each bot's pairings, then sorted by opponent:
    for (a, b), p in state.items():  # much cheaper than sorting a million (a, b) keys
        by_bot.setdefault(a, []).append((b, p))
    order = sorted(by_bot)
    for a in order:
        by_bot[a].sort(key=itemgetter(0))
    pairings.clear_rumble(db, rumble_id)
    pairings.put_pairings(
        db,
        (
            (rumble_id, a, b, p.battles, p.aps, p.aps_m2, p.survival, p.last_battle,
             priority.pairing_priority(p, min_battles) if a < b and (a, b) not in held else None)
            for a in order for b, p in by_bot[a]
        ),
    )  # fmt: skip
    active = {bot for bot in field.ids if field.active[field.position[bot]]}
    # Battles revive bots without an event, so after a rollback the replay may see a bot retired
    # that the participants table still has active: the replay decides.
    bots.sync_active(db, rumble_id, {bot: bot in active for bot in field.ids}, utc_now())
    rows = []
    for a in order:
        total = scores.totals_of(p for b, p in by_bot[a] if b in active)
        rows.append((a, total, scores.summary(total), max(p.last_battle for _, p in by_bot[a])))
    pairings.put_totals(db, rumble_id, rows)
    rating_rows.clear_ratings(db, rumble_id)
    rated = [(bot, field.ratings(bot)) for bot in order]  # a melee bot whose battles are all still open has none yet
    rating_rows.put_ratings(db, rumble_id, [(bot, r) for bot, r in rated if r.rated_at == r.rated_at])  # NaN: never rated
    rating_rows.bump_generation(db, rumble_id)
    fields.forget(db, rumble_id)
