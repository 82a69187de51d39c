"""What an uploader that is not established can move: a bounded number of battles per bot and day.

On a ladder where a maintainer vouched for someone (so that trust means something), the battles of
a party that is not established (rumble/rankings/uploader_trust.py) count for each bot at most
STRANGER_BATTLES_PER_BOT_PER_DAY a day (UTC); a further battle of that bot from that party is held
for review (state ``flagged``, its reason recorded) and counts only once a maintainer releases it
(unflag on /admin). An honest client is rarely held: a client running 5,000 battles a day on a
1,200-bot ladder names each bot about 8 times a day, and it becomes established once 100 of its
battles on 20 pairings agree with the established uploaders' (the hourly batch run), after which
nothing of it is held.

The bound: a bot's APS is the mean of its pairings' means, each within 0 to 100, so one party's
battles counted in a day move it at most STRANGER_BATTLES_PER_BOT_PER_DAY × 100 / (pairings)
points; 20 battles on a 1,200-bot ladder: 1.7 points a day at the very most (a whole pairing turned
from 0 to 100 by each battle). Melee rumbles are left out: a melee battle arrives as up to 45 pair
uploads that are one battle, and holding some of its pairs would split it.
"""

from __future__ import annotations

from dataclasses import dataclass

from rumble.protocol.battle import Battle
from rumble.rankings import uploader_trust
from rumble.store import Store, bots, trust


@dataclass(frozen=True)
class Decision:
    """Whether a battle is held, and the party to count it for once stored (None: not counted)."""

    held: str | None
    party: str | None


NOT_COUNTED = Decision(None, None)


def decide(db: Store, rumble_id: int, battle: Battle, day: str, per_bot_per_day: int) -> Decision:
    """Hold or count ``battle`` (stamped with its address; inside the write transaction)."""
    if per_bot_per_day <= 0 or battle.melee or not trust.any_vouched(db):
        return NOT_COUNTED
    party = uploader_trust.party(battle.uploader, battle.remote_addr)
    if trust.standing_of(db, rumble_id, party)[0]:
        return NOT_COUNTED
    for name in (battle.first.name, battle.second.name):
        bot = bots.find_bot_in_write(db, name)
        if bot is None:
            continue  # a new bot: nothing of it counted yet (the bounds on new bots are growth.py's)
        counted = trust.stranger_battles(db, rumble_id, bot, party, day)
        if counted >= per_bot_per_day:
            return Decision(
                f"held for review: {counted} battles of {name} from {party}, an uploader not established, "
                f"already count today (at most {per_bot_per_day} a bot and day)",
                party,
            )
    return Decision(None, party)


def count(db: Store, rumble_id: int, battle: Battle, decision: Decision, day: str) -> None:
    """Count a stored battle that ``decide`` let through for its party (inside the write transaction)."""
    if decision.party is None or decision.held is not None:
        return
    first, second = bots.find_bot_in_write(db, battle.first.name), bots.find_bot_in_write(db, battle.second.name)
    if first is not None and second is not None:
        trust.add_stranger_battle(db, rumble_id, (first, second), decision.party, day)
