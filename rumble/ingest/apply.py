"""Applying battles: the one path from the log to the derived tables.

``apply_battle`` is used by the upload endpoint, ``rumble import`` and the demo; ``rumble.maintenance.rebuild``
replays the log through the same pure functions (``scores.score_battle``, ``scores.contribution``,
``online.rate_battle``) so that a rebuild equals the online tables bit for bit. Callers hold the
write transaction (``store.write``), so a battle's log row, pairings, summaries and ratings are
applied together or not at all.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, replace
from datetime import datetime, timedelta

from rumble.ingest import fields, melee, priority
from rumble.protocol.battle import Battle
from rumble.rankings import scores
from rumble.rankings.scores import Pairing, Totals
from rumble.ratings import online
from rumble.store import (
    Store,
    battle_log,
    bots,
    format_time,
    melee_battles,
    missing_pairings,
    pairings,
    priority_queue,
    rating_rows,
)
from rumble.store.confirmation_queue import hand_out  # unconfirmed pairings go to another uploader first
from rumble.store.rumbles import by_survival, known_rumble_id

MISSING_DRAWN = 4  # missing pairings read per pair of a batch: a wider window to draw from, and room for a melee cap


@dataclass(frozen=True)
class Applied:
    """What became of one battle: stored (or a repeat of a stored one) and the bots' battle counts."""

    stored: bool
    battle_id: int | None
    counts: tuple[int, int]


def apply_battle(db: Store, battle: Battle, rounds: int, min_battles: int) -> Applied:
    """Log ``battle`` and update its pairings and the two bots' summaries and ratings (caller holds the transaction)."""
    rumble_id = known_rumble_id(db, battle.game)
    if rumble_id is None:
        raise LookupError(f"rumble {battle.game!r} is not in the database")
    when = battle.received_at
    a = bots.bot_id(db, battle.first.name, when, battle.remote_addr)
    b = bots.bot_id(db, battle.second.name, when, battle.remote_addr)
    copy = fields.current(db, rumble_id)  # before this battle is logged: it reflects the log up to here
    battle_id = battle_log.append_battle(db, rumble_id, a, b, battle)
    if battle_id is None or battle.state != "ok":  # a repeat, or a battle logged as not counting
        return Applied(battle_id is not None, battle_id, (_battles(db, rumble_id, a), _battles(db, rumble_id, b)))
    entered = False
    for bot in (a, b):  # the copy knows every participant and whether it is active
        if not copy.field.is_active(bot):
            entered = activate(db, rumble_id, bot, when) or entered
    if not entered:  # (entering writes a batch of its own)
        missing_pairings.fill_pending(db, rumble_id)  # the next pairs of a bot that entered lately, if any
    battle = scored_by(battle, by_survival(db, rumble_id))  # logged as uploaded; twinduel counts rounds won
    old_a, old_b = pairings.pairing_pair(db, rumble_id, a, b)
    new_a, new_b = scores.score_battle(
        old_a,
        old_b,
        (battle.first.score, battle.second.score),
        (battle.first.firsts, battle.second.firsts),
        rounds,
        when,
    )
    # The pairing (lower id first) is in the priority index unless queued or handed out recently:
    # played meanwhile, it stays out until ``forget_handed_out`` puts it back, as a rebuild has it.
    low, high, new_low = (a, b, new_a) if a < b else (b, a, new_b)
    indexed = not priority_queue.is_held(db, rumble_id, low, high)
    ranked = priority.pairing_priority(new_low, min_battles) if indexed else None
    pairings.put_pairing(db, rumble_id, a, b, new_a, ranked if a < b else None)
    pairings.put_pairing(db, rumble_id, b, a, new_b, ranked if b < a else None)
    if old_a is None:  # their first battle: no longer a missing pairing
        missing_pairings.drop_pairs(db, rumble_id, [(min(a, b), max(a, b))])
    found = pairings.totals_of(db, rumble_id, (a, b))
    rows = []
    for bot, old, new in ((a, old_a, new_a), (b, old_b, new_b)):
        # The opponent is active (just activated), so this pairing counts in the bot's totals.
        total, last = found.get(bot, (Totals(), ""))
        total = scores.replace_contribution(total, old, new)
        rows.append((bot, total, scores.summary(total), max(last, when)))
    pairings.put_totals(db, rumble_id, rows)
    share = scores.battle_percent(battle.first.score, battle.second.score) / 100.0
    if battle.melee:  # a pair counts as a pairing; its whole battle is rated once, when closed (rumble/ingest/melee.py)
        record_pairings(copy.field, a, b, new_a, new_b)
        melee.apply_logged(db, rumble_id, battle_id, copy.field)
    else:
        rate(copy.field, a, b, new_a, new_b, share, when)
        rating_rows.put_ratings(db, rumble_id, [(bot, copy.field.ratings(bot)) for bot in (a, b)])
    fields.saw(db, copy, battle=battle_id)
    return Applied(True, battle_id, (rows[0][1].battles, rows[1][1].battles))


def rate(field: online.Field, a: int, b: int, new_a: Pairing, new_b: Pairing, share_a: float, when: str) -> None:
    """Record a battle's pairings in ``field`` and rate both bots; the field keeps the new ratings."""
    record_pairings(field, a, b, new_a, new_b)
    online.rate_battle(field, a, b, share_a, online.seconds(when))


def record_pairings(field: online.Field, a: int, b: int, new_a: Pairing, new_b: Pairing) -> None:
    """Record a battle's pairings in ``field`` (both bots active), without rating: a melee pair's
    ratings wait for its whole battle."""
    for bot in (a, b):
        field.set_active(bot, True)
    field.set_pairing(a, b, new_a.aps)
    field.set_pairing(b, a, new_b.aps)


def with_receipt(battle: Battle, remote_addr: str | None, received: datetime) -> Battle:
    """The battle stamped with the server's receive time and the uploader's address."""
    return replace(battle, received_at=format_time(received), remote_addr=remote_addr)


def battle_shares(
    first_score: int, second_score: int, first_firsts: int, second_firsts: int, survival: bool
) -> tuple[int, int]:
    """What a battle's percentage is computed from: the two scores, or in a rumble scored by
    survival (twinduel) the rounds each side won."""
    return (first_firsts, second_firsts) if survival else (first_score, second_score)


def scored_by(battle: Battle, survival: bool) -> Battle:
    """``battle`` with each side's score replaced by what the rumble scores (``battle_shares``)."""
    if not survival:
        return battle
    return replace(
        battle,
        first=replace(battle.first, score=battle.first.firsts),
        second=replace(battle.second, score=battle.second.firsts),
    )


def _battles(db: Store, rumble_id: int, bot: int) -> int:
    found = pairings.totals_of(db, rumble_id, (bot,)).get(bot)
    return found[0].battles if found else 0


def activate(db: Store, rumble_id: int, bot: int, now: str) -> bool:
    """Make ``bot`` an active participant (new, or revived); return True if it was not active."""
    state = bots.participant_state(db, rumble_id, bot)
    if state is None:
        bots.add_participant(db, rumble_id, bot, now)
        missing_pairings.add_bot(db, rumble_id, bot)
        return True
    if state:
        return False
    bots.set_active(db, rumble_id, bot, True, now)
    missing_pairings.add_bot(db, rumble_id, bot)
    _shift_opponents(db, rumble_id, bot, +1)
    return True


def retire(db: Store, rumble_id: int, bot: int, now: str, source: str) -> bool:
    """Retire ``bot``: its pairings stop counting for every opponent. False if it was not active.

    The retirement is logged (``source`` says who asked) so that a rebuild can replay it in order.
    """
    if not bots.participant_state(db, rumble_id, bot):
        return False
    copy = fields.current(db, rumble_id)
    event = bots.record_event(db, rumble_id, bot, False, now, source)
    bots.set_active(db, rumble_id, bot, False, now)
    missing_pairings.drop_bot(db, rumble_id, bot)
    _shift_opponents(db, rumble_id, bot, -1)
    copy.field.set_active(bot, False)
    fields.saw(db, copy, event=event)
    return True


def restore(db: Store, rumble_id: int, bot: int, now: str, source: str) -> bool:
    """Bring a retired ``bot`` back: its pairings count again for every opponent. False if it was
    not retired (active, or never in the rumble). Logged like ``retire``, for the rebuild.
    """
    if bots.participant_state(db, rumble_id, bot) is not False:
        return False
    copy = fields.current(db, rumble_id)
    event = bots.record_event(db, rumble_id, bot, True, now, source)
    bots.set_active(db, rumble_id, bot, True, now)
    missing_pairings.add_bot(db, rumble_id, bot)
    _shift_opponents(db, rumble_id, bot, +1)
    copy.field.set_active(bot, True)
    fields.saw(db, copy, event=event)
    return True


def _shift_opponents(db: Store, rumble_id: int, bot: int, sign: int) -> None:
    """Add (+1) or remove (-1) each opponent's pairing with ``bot`` from that opponent's totals."""
    opponents = pairings.opponents_of(db, rumble_id, bot)
    found = pairings.totals_of(db, rumble_id, [opponent for opponent, _ in opponents])
    rows = []
    for opponent, pairing in opponents:
        total, last = found.get(opponent, (Totals(), ""))
        part = scores.contribution(pairing)
        total = total + part if sign > 0 else total - part
        rows.append((opponent, total, scores.summary(total), last))
    pairings.put_totals(db, rumble_id, rows)


def next_priority_battle(
    db: Store,
    game: str,
    batch: int,
    min_battles: int,
    hold_minutes: float,
    rng: random.Random,
    now_dt: datetime,
    uploader: str | None = None,
) -> tuple[str, str] | None:
    """Hand out the rumble's next priority battle, choosing a new batch when the queue is empty.
    ``uploader`` gets first a waiting pairing only another uploader has played (rumble.store.confirmation_queue)."""
    rumble_id = known_rumble_id(db, game)
    now = format_time(now_dt)
    found = _pop(db, rumble_id, uploader, now)
    if found is not None:
        return found
    forgotten = priority_queue.forget_handed_out(db, rumble_id, format_time(now_dt - timedelta(minutes=hold_minutes)))
    for a, b in forgotten:
        pairing = pairings.pairing_pair(db, rumble_id, a, b)[0]
        if pairing is not None:
            priority_queue.set_priority(db, rumble_id, a, b, priority.pairing_priority(pairing, min_battles))
    missing_pairings.restore_pairs(db, rumble_id, forgotten)  # those still unplayed may be asked for again
    pairs = _choose_batch(db, rumble_id, batch, min_battles, rng)
    if not pairs:
        return None
    priority_queue.enqueue(db, rumble_id, pairs, now)
    missing_pairings.drop_pairs(db, rumble_id, [(a, b) for a, b, _ in pairs])  # held now, until forgotten
    return _pop(db, rumble_id, uploader, now)


def _pop(db: Store, rumble_id: int, uploader: str | None, now: str) -> tuple[str, str] | None:
    return (
        priority_queue.pop_waiting(db, rumble_id, now) if uploader is None else hand_out(db, rumble_id, uploader, now)
    )


def _choose_batch(
    db: Store, rumble_id: int, batch: int, min_battles: int, rng: random.Random
) -> list[tuple[int, int, str]]:
    """Missing pairings first, then the pairings the priority index ranks highest; in a melee
    rumble no bot in more than ``priority.melee_cap(batch)`` of them (rumble/ingest/priority.py)."""
    chosen: list[tuple[int, int, str]] = []
    taken: set[tuple[int, int]] = set()
    cap = priority.melee_cap(batch) if melee_battles.is_melee(db, rumble_id) else None
    counts: dict[int, int] = {}
    # A random draw of missing pairings, each about equally likely: a bot comes up in proportion to how many it lacks.
    drawn = missing_pairings.draw(db, rumble_id, rng.randrange(missing_pairings.DRAW_KEYS), MISSING_DRAWN * batch)
    rng.shuffle(drawn)  # any of the window, not its first keys: evens out the gaps between keys
    for pair in drawn:
        chosen += priority.within_cap([(*pair, "missing")], counts, cap)
        taken.add(pair)
        if len(chosen) >= batch:
            break
    if len(chosen) >= batch:
        return chosen
    candidates = [c for c in priority_queue.top_pairings(db, rumble_id, 8 * batch) if (c[0], c[1]) not in taken]
    if cap is None:
        return chosen + priority.choose_pairs(candidates, batch - len(chosen), rng)
    while len(chosen) < batch:  # melee: draw again from the pairings of bots not yet at their cap
        candidates = [c for c in candidates if max(counts.get(c[0], 0), counts.get(c[1], 0)) < cap]
        if not candidates:
            break
        kept = priority.within_cap(priority.choose_pairs(candidates, batch - len(chosen), rng), counts, cap)
        if not kept:  # cannot happen (the first pair drawn has both bots under the cap), but never spin here
            break
        chosen += kept
        done = {(a, b) for a, b, _ in kept}
        candidates = [c for c in candidates if (c[0], c[1]) not in done]
    return chosen
