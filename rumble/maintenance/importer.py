"""``rumble import``: a battle log file (CSV or JSONL, the columns of ``rumble export``) into the log.

Each row is checked with the upload path's own parser and rumble-settings check, and applied with
``ingest.apply.apply_battle``; the client-version and 24-hour checks of live uploads do not apply to
history. The file is checked whole before anything is written, and written in one transaction.
"""

from __future__ import annotations

import csv
import json
import re
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from rumble.ingest.apply import apply_battle
from rumble.protocol import ProtocolError
from rumble.protocol.battle import Battle
from rumble.protocol.games import RumbleSettings
from rumble.protocol.upload import battle_from_fields, check_settings
from rumble.store import Store, utc_now, write

REQUIRED = (
    "game",
    "client",
    "rounds",
    "field",
    "uploader",
    "client_time",
    "first_name",
    "first_score",
    "first_bullet_damage",
    "first_firsts",
    "second_name",
    "second_score",
    "second_bullet_damage",
    "second_firsts",
)
COLUMN_OF_FIELD = {
    "user": "uploader",
    "time": "client_time",
    "fname": "first_name",
    "fscore": "first_score",
    "fbulletd": "first_bullet_damage",
    "fsurvival": "first_firsts",
    "sname": "second_name",
    "sscore": "second_score",
    "sbulletd": "second_bullet_damage",
    "ssurvival": "second_firsts",
}
_COLUMN_OF = re.compile(r"\b(" + "|".join(COLUMN_OF_FIELD) + r")\b")
_TIME = re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(\.\d{3})?")
MAX_ERRORS_SHOWN = 20


class ImportError_(ValueError):
    """The file cannot be imported; the message lists the bad rows."""


def _flag(value: object) -> str:
    text = str(value).strip().upper()
    if text in {"1", "YES", "TRUE"}:
        return "YES"
    if text in {"0", "NOT", "NO", "FALSE"}:
        return "NOT"
    raise ProtocolError(f"expected 0 or 1, not {value!r}")


def battle_from_row(row: dict, rumbles: dict[str, RumbleSettings]) -> Battle:
    """One log row (strings or numbers) as a Battle, checked like an upload."""
    missing = [key for key in REQUIRED if row.get(key) in (None, "")]
    if missing:
        raise ProtocolError("missing column(s): " + ", ".join(missing))
    text = {key: str(value) for key, value in row.items() if value is not None}
    fields = {
        "game": text["game"],
        "version": text.get("version") or "1",
        "client": text["client"],
        "teams": _flag(row.get("teams", 0)),
        "melee": _flag(row.get("melee", 0)),
        "rounds": text["rounds"],
        "field": text["field"],
        "user": text["uploader"],
        "time": text["client_time"],
        "fname": text["first_name"],
        "fscore": text["first_score"],
        "fbulletd": text["first_bullet_damage"],
        "fsurvival": text["first_firsts"],
        "sname": text["second_name"],
        "sscore": text["second_score"],
        "sbulletd": text["second_bullet_damage"],
        "ssurvival": text["second_firsts"],
    }
    try:
        battle = battle_from_fields(fields)
    except ProtocolError as error:  # name the file's columns, not the protocol's fields
        raise ProtocolError(_COLUMN_OF.sub(lambda m: COLUMN_OF_FIELD[m.group(0)], str(error))) from None
    check_settings(battle, rumbles.get(battle.game))
    received = text.get("received_at") or utc_now()
    if not _TIME.fullmatch(received):
        raise ProtocolError(f"received_at must be 'YYYY-MM-DD HH:MM:SS[.mmm]', not {received[:30]!r}")
    if len(received) == 19:
        received += ".000"
    state = text.get("state") or "ok"
    if state not in {"ok", "flagged", "removed"}:
        raise ProtocolError(f"state must be ok, flagged or removed, not {state[:20]!r}")
    return replace(battle, received_at=received, remote_addr=text.get("remote_addr") or None, state=state)


def _rows(path: Path):
    with path.open(encoding="utf-8", newline="") as handle:
        first = handle.read(1)
        handle.seek(0)
        if first == "{":
            for number, line in enumerate(handle, start=1):
                if line.strip():
                    try:
                        yield number, json.loads(line)
                    except json.JSONDecodeError as error:
                        yield number, error
        else:
            for number, row in enumerate(csv.DictReader(handle), start=2):
                yield number, row


def read_battles(path: Path, rumbles: dict[str, RumbleSettings]) -> list[Battle]:
    """Every battle of the file, or ImportError_ naming each bad line (none is imported then)."""
    battles, errors = [], []
    try:
        for number, row in _rows(path):
            if isinstance(row, Exception) or not isinstance(row, dict):
                errors.append(f"line {number}: not a JSON object")
                continue
            try:
                battles.append(battle_from_row(row, rumbles))
            except ProtocolError as error:
                errors.append(f"line {number}: {error}")
    except UnicodeDecodeError:
        raise ImportError_(f"{path} is not UTF-8 text") from None
    if errors:
        shown = "\n".join(errors[:MAX_ERRORS_SHOWN])
        more = f"\n... and {len(errors) - MAX_ERRORS_SHOWN} more" if len(errors) > MAX_ERRORS_SHOWN else ""
        raise ImportError_(f"{len(errors)} bad row(s) in {path}; nothing was imported:\n{shown}{more}")
    return battles


def store_battles(
    db: Store,
    battles: list[Battle],
    rumbles: dict[str, RumbleSettings],
    min_battles: int,
    progress: Callable[[int], None] | None = None,
) -> int:
    """Apply the battles in order, in one transaction; return how many were new to the log."""
    stored = 0
    with write(db):
        for battle in battles:
            stored += apply_battle(db, battle, rumbles[battle.game].rounds, min_battles).stored
            if progress:
                progress(1)
    return stored
