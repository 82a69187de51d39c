"""One upload, from its body to its outcome: parse and check it (``check``, before the write lock),
store it in the write transaction and decide the answer (``store_checked``: accepted, held, a
repeat, or refused in the protocol's form).

The upload endpoint (rumble.web.client) checks it in the worker, then has ``store_checked`` run in
a transaction shared with the other uploads waiting: the server's writer process's
(rumble.server.single_writer), or without one its own. The writer never imports the web layer.
"""

from __future__ import annotations

import random
from dataclasses import replace
from datetime import timedelta

from rumble import overrides, store
from rumble.clock import Clock
from rumble.ingest import apply, fields, growth, plausibility, strangers
from rumble.protocol import ProtocolError
from rumble.protocol.battle import Battle
from rumble.protocol.games import RumbleSettings
from rumble.protocol.replies import Kind, UploadOutcome
from rumble.protocol.upload import Policy, check_upload, parse_upload
from rumble.store import Store, battle_states, melee_battles
from rumble.store.rumbles import known_rumble_id, rumble_id

_rng = random.Random()


UPLOAD_SETTINGS = (
    "ACCEPTED_CLIENTS",
    "MAX_BATTLE_AGE_HOURS",
    "MAX_CLOCK_SKEW_MINUTES",
    "NEW_BOTS_PER_HOUR",
    "NEW_BOTS_PER_HOUR_PER_RUMBLE",
    "MAX_PARTICIPANTS",
    "STRANGER_BATTLES_PER_BOT_PER_DAY",
    "PRIORITY_BATCH",
    "PRIORITY_MIN_BATTLES",
    "PRIORITY_HOLD_MINUTES",
)  # what ``check`` and ``store_checked`` read of the settings (sent with each upload to the writer process)


def prepare(game: str, db: Store) -> None:
    """Before the write lock: a process's first upload to a rumble reads its ratings copy (rumble.ingest.fields)."""
    found = rumble_id(db, game)
    if found is not None:  # (an upload to a rumble not in the database is refused in the transaction)
        fields.preload(db, found)


def check(
    body: bytes, rumble: RumbleSettings | None, settings: dict, received: int, db: Store
) -> tuple[Battle, str | None, RumbleSettings] | UploadOutcome:
    """Parse and check one upload as received at ``received`` (ms since the epoch): the battle, why
    its figures are implausible (None if they are not) and its rumble's settings, as maintainers
    changed them from /admin; or the refusal."""
    stored = overrides.load(db)  # the whitelist and rumble settings maintainers set from /admin
    try:
        battle = parse_upload(body)
        policy = Policy(
            accepted_clients=stored.accepted_clients(settings["ACCEPTED_CLIENTS"]),
            max_age_ms=int(settings["MAX_BATTLE_AGE_HOURS"] * 3_600_000),
            max_skew_ms=int(settings["MAX_CLOCK_SKEW_MINUTES"] * 60_000),
        )
        rumble = stored.rumble(rumble)
        check_upload(battle, rumble, policy, received)
    except ProtocolError as error:
        return refused(str(error))
    assert rumble is not None  # check_upload refuses an unknown rumble
    suspicion = plausibility.suspicion(battle)  # logged but held for review: rumble/ingest/plausibility.py
    if suspicion is not None:
        battle = replace(battle, state="flagged")
    return battle, suspicion, rumble


def store_checked(
    battle: Battle,
    suspicion: str | None,
    rumble: RumbleSettings,
    settings: dict,
    moment: Clock,
    remote_addr: str | None,
    db: Store,
) -> UploadOutcome:
    """Store one checked upload on ``db`` inside the write transaction and decide its answer (no
    request context here: another thread's group may apply it)."""
    # Stamped under the write lock, so receive times never go backwards along the log.
    now = moment.now()
    battle = apply.with_receipt(battle, remote_addr, now)
    hour_ago = store.format_time(now - timedelta(hours=1))
    entry = growth.check(
        db,
        battle,
        hour_ago,
        settings["NEW_BOTS_PER_HOUR"],
        settings["MAX_PARTICIPANTS"],
        settings["NEW_BOTS_PER_HOUR_PER_RUMBLE"],
    )
    if entry.refusal is not None:  # nothing of it written: not the battle, not a bot's row
        return refused(entry.refusal)
    day = store.format_time(now)[:10]
    stranger = strangers.decide(
        db, known_rumble_id(db, battle.game), battle, day, settings["STRANGER_BATTLES_PER_BOT_PER_DAY"]
    )
    if stranger.held is not None and suspicion is None:  # over the bound: logged, held for review
        battle, suspicion = replace(battle, state="flagged"), stranger.held
    applied = apply.apply_battle(db, battle, rumble.rounds, settings["PRIORITY_MIN_BATTLES"])
    if applied.stored:
        growth.record(db, battle, entry, hour_ago)
    if applied.stored and battle.state == "ok":
        strangers.count(db, known_rumble_id(db, battle.game), battle, stranger, day)
    pair = None
    if applied.battle_id is not None and suspicion is not None:
        battle_states.record_flag_reason(db, applied.battle_id, suspicion, battle.received_at)
    # A melee battle arrives as up to 45 uploads but is one battle: one priority line for it,
    # on the pair that opened it (rumble/ingest/priority.py, melee), not one per pair.
    elif applied.battle_id is not None and (not rumble.melee or melee_battles.opens_battle(db, applied.battle_id)):
        pair = apply.next_priority_battle(
            db,
            battle.game,
            settings["PRIORITY_BATCH"],
            settings["PRIORITY_MIN_BATTLES"],
            settings["PRIORITY_HOLD_MINUTES"],
            _rng,
            now,
            battle.uploader,  # unconfirmed pairings go to another uploader first
        )
    names = (battle.game, battle.first.name, battle.second.name, applied.counts)
    if not applied.stored:
        return UploadOutcome(Kind.DUPLICATE, *names)
    if suspicion is not None:
        return UploadOutcome(Kind.HELD, *names, reason=suspicion)
    return UploadOutcome(Kind.ACCEPTED, *names, priority=pair)


def refused(reason: str) -> UploadOutcome:
    """An upload refused for good: the client drops it on the answer's OK line."""
    return UploadOutcome(Kind.REFUSED, reason=reason)
