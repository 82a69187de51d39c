"""Entering, approving, refusing and withdrawing bots in the participants lists rumble serves.

Each action is decided twice on the same rules: first in a read snapshot, so that a refusal
(an unknown rumble, a package of another account, a name bound to another jar, a bot already
listed, a limit reached) is answered without taking the write lock, then again inside the write
transaction, where it is applied, so that two requests racing cannot both pass. Every change is
audited in its own transaction; a listed bot that leaves the list (withdrawn, or replaced by a new
version) is retired at once in its rumble and every division that follows it (its battles stay
in the log).

A list is a general rumble's (``family``): its mini, micro and nano divisions follow it, as the
stock client configs read one participants list per config file.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta

from rumble import store
from rumble.ingest import apply
from rumble.ingest.jar_check import CheckedJar
from rumble.protocol.games import RumbleSettings
from rumble.protocol.names import split_name
from rumble.store import Store, bots, jars, maintainers
from rumble.store.rumbles import rumble_id


class Refused(Exception):
    """An action that is not done: ``status`` (HTTP) and a message for the person who asked."""

    def __init__(self, message: str, status: int = 400):
        super().__init__(message)
        self.status = status


@dataclass(frozen=True)
class Actor:
    """Who asks: a competitor's account (``competitor_id``) or a maintainer (``maintainer``)."""

    who: str  # as the audit log names them: 'competitor NAME', a maintainer's name, 'cli:<user>'
    competitor_id: int | None = None
    maintainer: bool = False
    remote_addr: str | None = None


def family_of(rumbles: Mapping[str, RumbleSettings], game: str) -> RumbleSettings:
    """The general rumble whose list ``game`` follows (itself, or a division's family); Refused
    (404) for a rumble the server does not run."""
    settings = rumbles.get(game)
    if settings is None:
        raise Refused(f"there is no rumble called {game[:60]!r}", 404)
    family = rumbles.get(settings.family or game)
    return family if family is not None else settings


def divisions_of(rumbles: Mapping[str, RumbleSettings], family: str) -> list[str]:
    """The rumbles that follow the list of ``family``: itself and its divisions."""
    return sorted(name for name, r in rumbles.items() if name == family or (r.family or name) == family)


def package_of(name: str) -> str:
    return split_name(name)[0]


def bot_class_of(name: str) -> str:
    return name.split(" ", 1)[0]


def _owner_check(db: Store, package: str, actor: Actor, what: str) -> None:
    """Refused (403) unless ``actor`` may ``what`` in ``package``: a maintainer, its owner, or
    anyone while nobody entered a bot of it."""
    claimed, owner = jars.package_owner(db, package)
    if actor.maintainer or not claimed or (owner is not None and owner == actor.competitor_id):
        return
    whose = "the maintainers" if owner is None else "another account"
    raise Refused(f"the package {package} belongs to {whose}: only its owner or a maintainer may {what}", 403)


@dataclass(frozen=True)
class EntryPlan:
    """What entering a jar will do, as decided in a snapshot."""

    family: str
    state: str  # 'listed' or 'pending'
    new_jar: bool
    claim: bool  # the package is entered for the first time


def plan_entry(
    db: Store,
    family: RumbleSettings,
    jar: CheckedJar,
    actor: Actor,
    approval: bool,
    per_day: int,
    now: datetime,
) -> EntryPlan:
    """Decide whether ``jar`` may enter the list of ``family`` (Refused says why not)."""
    package, bot_class = package_of(jar.name), bot_class_of(jar.name)
    _owner_check(db, package, actor, "enter its bots")
    bound = jars.jar(db, jar.name)
    if bound is not None and bound["sha256"] != jar.sha256:
        raise Refused(
            f"{jar.name} is already bound to another jar (SHA-256 {bound['sha256']}): a name and version "
            "always means one jar; give the new jar a new version",
            400,
        )
    live = jars.live_entries(db, family.name, bot_class)
    for state in ("listed", "pending"):
        found = live.get(state)
        if found is not None and found["name"] == jar.name:
            words = "is already listed" if state == "listed" else "already waits for a maintainer's approval"
            raise Refused(f"{jar.name} {words} in {family.name}", 400)
    if actor.competitor_id is not None and not actor.maintainer:
        since = store.format_time(now - timedelta(days=1))
        if jars.account_entries_since(db, actor.competitor_id, since) >= per_day:
            raise Refused(f"your account entered {per_day} bots in the last 24 hours; that is the most it may", 429)
    claimed, _ = jars.package_owner(db, package)
    state = "pending" if approval and not actor.maintainer else "listed"
    return EntryPlan(family.name, state, new_jar=bound is None, claim=not claimed)


def enter(
    db: Store,
    rumbles: Mapping[str, RumbleSettings],
    game: str,
    jar: CheckedJar,
    content: bytes,
    actor: Actor,
    approval: bool,
    per_day: int,
    now: datetime,
    owner: int | None = None,
) -> dict:
    """Enter ``jar`` in the list ``game`` follows: checked in a snapshot, then applied and audited
    in one write transaction (checked again there). ``owner``: the account a maintainer enters it
    for (it then owns a package entered for the first time). Refused says why nothing was done."""
    family = family_of(rumbles, game)
    if jar.kind != ("team" if family.teams else "robot"):
        raise Refused(
            f"{family.name} is a {'team' if family.teams else 'robot'} rumble: this jar was checked as a {jar.kind}"
        )
    with store.read(db):
        plan_entry(db, family, jar, actor, approval, per_day, now)
    stamp = store.format_time(now)
    with store.write(db):
        plan = plan_entry(db, family, jar, actor, approval, per_day, now)
        package, bot_class = package_of(jar.name), bot_class_of(jar.name)
        if plan.new_jar:
            jar_id = jars.add_jar(
                db,
                jar.name,
                jar.sha256,
                jar.kind,
                jar.files,
                jar.unpacked,
                content,
                stamp,
                actor.competitor_id,
                actor.remote_addr,
            )
        else:
            found = jars.jar(db, jar.name)
            assert found is not None
            jar_id = found["id"]
        if plan.claim:
            jars.claim_package(db, package, owner if actor.maintainer else actor.competitor_id, stamp)
        live = jars.live_entries(db, family.name, bot_class)
        replaced_pending = live.get("pending")
        if replaced_pending is not None:
            jars.end_entry(db, replaced_pending["id"], "replaced", stamp, actor.who, f"replaced by {jar.name}")
        retired: dict[str, int] = {}
        replaced = None
        if plan.state == "listed":  # the old version leaves the list first: one listed version per bot
            replaced = _replace_listed(db, rumbles, family.name, live.get("listed"), jar.name, actor, stamp, retired)
        entry_id = jars.add_entry(
            db,
            family.name,
            bot_class,
            package,
            jar_id,
            plan.state,
            actor.competitor_id,
            actor.who,
            actor.remote_addr,
            stamp,
        )
        details = {
            "game": family.name,
            "bot": jar.name,
            "sha256": jar.sha256,
            "size": jar.size,
            "state": plan.state,
            "entry": entry_id,
            "replaced": replaced,
            "retired": retired,
            "remote_addr": actor.remote_addr,
        }
        if replaced_pending is not None:
            details["replaced_pending"] = replaced_pending["name"]
        maintainers.audit(db, actor.who, "enter", details, sum(retired.values()), stamp)
    return {
        "game": family.name,
        "name": jar.name,
        "state": plan.state,
        "sha256": jar.sha256,
        "size": jar.size,
        "entry": entry_id,
        "replaced": replaced,
        "retired": sorted(retired),
    }


def _replace_listed(
    db: Store,
    rumbles: Mapping[str, RumbleSettings],
    family: str,
    old: dict | None,
    new_name: str,
    actor: Actor,
    stamp: str,
    retired: dict[str, int],
) -> str | None:
    """Take the bot's listed version off the list for ``new_name`` and retire it: its name, or None."""
    if old is None:
        return None
    jars.end_entry(db, old["id"], "replaced", stamp, actor.who, f"replaced by {new_name}")
    retired.update(
        _retire_everywhere(db, rumbles, family, old["name"], stamp, f"participants list: replaced by {new_name}")
    )
    return old["name"]


def _retire_everywhere(
    db: Store, rumbles: Mapping[str, RumbleSettings], family: str, name: str, stamp: str, source: str
) -> dict[str, int]:
    """Retire ``name`` in ``family`` and each division that follows it, where it is active: the
    rumbles it left, each with the battles whose effect that changed."""
    bot = bots.find_bot(db, name)
    done: dict[str, int] = {}
    if bot is None:
        return done
    for game in divisions_of(rumbles, family):
        rid = rumble_id(db, game)
        if rid is not None and apply.retire(db, rid, bot, stamp, source):
            done[game] = maintainers.bot_battles(db, rid, bot)
    return done


def _live_entry(db: Store, family: str, name: str, states: tuple[str, ...]) -> dict:
    found = jars.entry_named(db, family, name)
    if found is None or found["state"] not in states:
        what = "waiting for approval" if states == ("pending",) else "listed or waiting for approval"
        raise Refused(f"{name[:80]!r} is not {what} in {family}", 404)
    return found


def withdraw(
    db: Store, rumbles: Mapping[str, RumbleSettings], game: str, name: str, actor: Actor, now: datetime
) -> dict:
    """Take ``name`` off the list ``game`` follows (listed or pending), by its owner or a
    maintainer: a listed bot is retired at once. Refused says why not."""
    family = family_of(rumbles, game).name
    with store.read(db):
        found = _live_entry(db, family, name, ("pending", "listed"))
        _owner_check(db, package_of(name), actor, "withdraw its bots")
    stamp = store.format_time(now)
    with store.write(db):
        found = _live_entry(db, family, name, ("pending", "listed"))
        _owner_check(db, package_of(name), actor, "withdraw its bots")
        jars.end_entry(db, found["id"], "withdrawn", stamp, actor.who, None)
        retired = {}
        if found["state"] == "listed":
            retired = _retire_everywhere(
                db, rumbles, family, name, stamp, f"participants list: withdrawn by {actor.who}"
            )
        details = {
            "game": family,
            "bot": name,
            "was": found["state"],
            "retired": retired,
            "remote_addr": actor.remote_addr,
        }
        maintainers.audit(db, actor.who, "withdraw", details, sum(retired.values()), stamp)
    return {"game": family, "name": name, "state": "withdrawn", "was": found["state"], "retired": sorted(retired)}


def approve(
    db: Store, rumbles: Mapping[str, RumbleSettings], game: str, name: str, actor: Actor, now: datetime
) -> dict:
    """List a pending entry (a maintainer's action); the version it replaces is retired."""
    family = family_of(rumbles, game).name
    with store.read(db):
        _live_entry(db, family, name, ("pending",))
    stamp = store.format_time(now)
    with store.write(db):
        found = _live_entry(db, family, name, ("pending",))
        old = jars.live_entries(db, family, found["bot_class"]).get("listed")
        retired: dict[str, int] = {}
        replaced = _replace_listed(db, rumbles, family, old, name, actor, stamp, retired)
        jars.list_entry(db, found["id"], stamp)
        details = {
            "game": family,
            "bot": name,
            "replaced": replaced,
            "retired": retired,
            "remote_addr": actor.remote_addr,
        }
        maintainers.audit(db, actor.who, "approve", details, sum(retired.values()), stamp)
    return {"game": family, "name": name, "state": "listed", "replaced": replaced, "retired": sorted(retired)}


def refuse(
    db: Store, rumbles: Mapping[str, RumbleSettings], game: str, name: str, reason: str, actor: Actor, now: datetime
) -> dict:
    """Refuse a pending entry (a maintainer's action), with the reason shown to its competitor."""
    family = family_of(rumbles, game).name
    with store.read(db):
        _live_entry(db, family, name, ("pending",))
    stamp = store.format_time(now)
    with store.write(db):
        found = _live_entry(db, family, name, ("pending",))
        jars.end_entry(db, found["id"], "refused", stamp, actor.who, reason[:500] or None)
        details = {"game": family, "bot": name, "reason": reason[:500], "remote_addr": actor.remote_addr}
        maintainers.audit(db, actor.who, "refuse-entry", details, 0, stamp)
    return {"game": family, "name": name, "state": "refused", "reason": reason[:500]}


def approval_required(db: Store, default: bool) -> bool:
    """Whether new entries wait for a maintainer: as a maintainer last set it, else ``default``
    (the ENTRIES_NEED_APPROVAL setting)."""
    stored = jars.approval_policy(db)
    return default if stored is None else stored


def set_approval(db: Store, required: bool, actor: Actor, now: datetime) -> None:
    """A maintainer says whether new entries wait for approval (audited)."""
    stamp = store.format_time(now)
    with store.write(db):
        jars.set_approval_policy(db, required, actor.who, stamp)
        maintainers.audit(
            db, actor.who, "entry-approval", {"required": required, "remote_addr": actor.remote_addr}, 0, stamp
        )
