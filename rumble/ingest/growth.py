"""Bounded growth: how many new bots one address and one rumble take in an hour, and how many a rumble holds.

Every participant of a rumble costs each server worker a row and a column of the rumble's pairing
matrix (rumble/ratings/online.py), and every bot a row in the database, so names invented by the
thousand would cost memory and time in every worker. An upload that would add a bot beyond a
limit is refused before anything of it is stored: not the battle, not the bot's row.

The per-address limit alone is no bound for a stranger with many addresses, so a rumble also takes
at most NEW_BOTS_PER_HOUR_PER_RUMBLE newcomers an hour, and at most MAX_PARTICIPANTS in all, from
uploaders that are not established (rumble/rankings/uploader_trust.py). An established uploader's
newcomer is taken whatever a flood left: a flood cannot close a rumble to the ladder's own clients.
"""

from __future__ import annotations

from dataclasses import dataclass

from rumble.protocol.battle import Battle
from rumble.rankings import uploader_trust
from rumble.store import Store, bots, trust
from rumble.store.rumbles import known_rumble_id


@dataclass(frozen=True)
class Entry:
    """What a battle may add to its rumble: ``refusal``, why not (None: it may), and ``joining``, the
    bots a stranger's battle adds, which count against NEW_BOTS_PER_HOUR_PER_RUMBLE once it is stored."""

    refusal: str | None
    joining: tuple[str, ...] = ()


def check(
    db: Store,
    battle: Battle,
    since: str,
    new_bots_per_hour: int,
    max_participants: int,
    new_bots_per_hour_per_rumble: int | None = None,
) -> Entry:
    """Whether ``battle`` (stamped with its address) may add its new bots.

    ``since``: an hour before now. A bot is new to the server when no upload named it before (it
    counts against its address's NEW_BOTS_PER_HOUR), and new to the rumble when it is not yet a
    participant, active or retired (it counts against NEW_BOTS_PER_HOUR_PER_RUMBLE and
    MAX_PARTICIPANTS, unless its uploader is established; only strangers' newcomers count against the
    hourly bound, so an operator filling a new ladder does not close it to strangers). Call inside
    the write transaction, so that two workers cannot both take the last place.
    """
    names = list(dict.fromkeys((battle.first.name, battle.second.name)))
    known = {name: bots.find_bot_in_write(db, name) for name in names}
    rumble_id = known_rumble_id(db, battle.game)
    joining = [name for name, found in known.items() if found is None or not bots.is_participant(db, rumble_id, found)]
    if not joining:
        return Entry(None)
    if trust.standing_of(db, rumble_id, uploader_trust.party(battle.uploader, battle.remote_addr))[0]:
        return Entry(None)
    unknown = [name for name, found in known.items() if found is None]
    if unknown:
        made = bots.new_bots_since(db, battle.remote_addr, since)
        if made + len(unknown) > new_bots_per_hour:
            return Entry(
                f"too many new bots from your address: {made} in the last hour, at most {new_bots_per_hour}; "
                f"{unknown[0]} is not added"
            )
    if new_bots_per_hour_per_rumble is not None:
        joined = bots.strangers_joined_since(db, rumble_id, since)
        if joined + len(joining) > new_bots_per_hour_per_rumble:
            return Entry(
                f"{battle.game} took {joined} new bots in the last hour, at most {new_bots_per_hour_per_rumble} "
                f"from uploaders not established; {joining[0]} is not added, try again later"
            )
    count = bots.participant_count(db, rumble_id)
    if count + len(joining) > max_participants:
        return Entry(
            f"{battle.game} is full: {count} participants, at most {max_participants}; {joining[0]} is not added"
        )
    return Entry(None, tuple(joining))


def record(db: Store, battle: Battle, entry: Entry, since: str) -> None:
    """Count the bots a stored stranger's battle added to its rumble (inside the write transaction);
    joins from before ``since`` (an hour ago) are forgotten meanwhile."""
    if not entry.joining:
        return
    rumble_id = known_rumble_id(db, battle.game)
    for name in entry.joining:
        bot = bots.find_bot_in_write(db, name)
        if bot is not None:
            bots.record_stranger_join(db, rumble_id, bot, battle.received_at, since)
