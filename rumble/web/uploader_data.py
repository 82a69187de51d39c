"""What the pages and the API show about uploaders, built once: the consistency table
(rumble.rankings.uploader_consistency), the unconfirmed pairings of a bot page, and the rollback
preview (rumble.rankings.rollback_preview). Reads only."""

from __future__ import annotations

from rumble.rankings import rollback_preview
from rumble.rankings.uploader_consistency import Share, consistency
from rumble.store import Store, bots, read, uploader_battles


def uploader_table(db: Store, rid: int) -> list[dict]:
    """Each uploader of the rumble with its consistency figures, flagged ones first."""
    with read(db):
        battles = uploader_battles.battle_shares(db, rid)
    return [v.as_dict() for v in consistency([Share(u, a, b, pa) for u, a, b, pa, _ in battles])]


def with_confirmation(db: Store, rid: int, page: dict) -> dict:
    """Mark each pairing row of a bot page ``confirmed`` (its battles come from two uploaders or
    more) and give the one ``uploader`` of an unconfirmed one."""
    bot = bots.find_bot(db, page["bot"]["name"])
    with read(db):
        sole = uploader_battles.sole_uploaders(db, rid, bot) if bot is not None else {}
    for row in page["pairings"]:
        row["confirmed"] = row["name"] not in sole
        row["sole_uploader"] = sole.get(row["name"])
    page["unconfirmed"] = sum(1 for row in page["pairings"] if not row["confirmed"])
    return page


def rollback(db: Store, rid: int, uploader: str) -> dict:
    """The APS table without ``uploader``'s battles, next to the current one; nothing changes."""
    with read(db):
        battles = uploader_battles.battle_shares(db, rid)
        active = set(bots.participant_names(db, rid))
    return rollback_preview.preview(battles, active, uploader)
