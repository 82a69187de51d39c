"""Bounded growth: how many new bots one address may add in an hour, and how many a rumble holds.

Every participant of a rumble costs each server worker a row and a column of the rumble's pairing
matrix (rumble/ratings/online.py), and every bot a row in the database, so names invented by the
thousand would cost memory and time in every worker. An upload that would add a bot beyond
either limit is refused before anything of it is stored: not the battle, not the bot's row.
"""

from __future__ import annotations

from rumble.battle import Battle
from rumble.store import Store, bots
from rumble.store.rumbles import known_rumble_id


def refusal(db: Store, battle: Battle, since: str, new_bots_per_hour: int, max_participants: int) -> str | None:
    """Why ``battle`` (stamped with its address) may not add its new bots, or None if it may.

    ``since``: an hour before now. A bot is new to the server when no upload named it before (it
    counts against its address's NEW_BOTS_PER_HOUR), and new to the rumble when it is not yet a
    participant, active or retired (it counts against MAX_PARTICIPANTS). Call inside the write
    transaction, so that two workers cannot both take the last place.
    """
    names = list(dict.fromkeys((battle.first.name, battle.second.name)))
    known = {name: bots.find_bot_in_write(db, name) for name in names}
    unknown = [name for name, found in known.items() if found is None]
    if unknown:
        made = bots.new_bots_since(db, battle.remote_addr, since)
        if made + len(unknown) > new_bots_per_hour:
            return (
                f"too many new bots from your address: {made} in the last hour, at most {new_bots_per_hour}; "
                f"{unknown[0]} is not added"
            )
    rumble_id = known_rumble_id(db, battle.game)
    joining = [name for name, found in known.items() if found is None or not bots.is_participant(db, rumble_id, found)]
    if joining:
        count = bots.participant_count(db, rumble_id)
        if count + len(joining) > max_participants:
            return f"{battle.game} is full: {count} participants, at most {max_participants}; {joining[0]} is not added"
    return None
