"""The participants lists from the command line: ``rumble participants ...`` (enter jars, list,
withdraw, approve, refuse, whether entries wait for approval) and ``rumble competitor ...``
(competitors' accounts).

Registered on the main group by ``rumble.cli`` (``register``). These are maintainers' commands:
once the database has a maintainer with a valid token, each needs one in ``RUMBLE_ADMIN_TOKEN``
and is audited under its name (``cli:<user>`` on a database with none), as ``rumble admin ...``.
"""

from __future__ import annotations

import getpass
import os
from datetime import UTC, datetime
from pathlib import Path

import click
from tqdm import tqdm

from rumble import store
from rumble.cli.options import db_option, open_database, settings_for

TOKEN_VARIABLE = "RUMBLE_ADMIN_TOKEN"


def _open(db: str | None) -> tuple[dict, store.Store]:
    values = settings_for(db)
    return values, open_database(values)


def _maintainer(conn: store.Store) -> str:
    """Who runs the command: the maintainer whose token is in RUMBLE_ADMIN_TOKEN, or ``cli:<user>``
    while the database has no valid maintainer; ClickException otherwise."""
    from rumble.store.maintainers import any_active, token_owner

    token = os.environ.get(TOKEN_VARIABLE, "").strip()
    if token:
        name = token_owner(conn, token)
        if name is None:
            raise click.ClickException(f"the token in {TOKEN_VARIABLE} is not a valid maintainer token")
        return name
    if any_active(conn):
        raise click.ClickException(
            f"this command needs a maintainer token: set {TOKEN_VARIABLE} (`rumble admin create-token NAME` makes one)"
        )
    try:
        return f"cli:{getpass.getuser()}"
    except (KeyError, OSError):
        return "cli"


def _now() -> datetime:
    return datetime.now(UTC)


def _rumbles(values: dict) -> dict:
    from rumble.protocol.games import load_rumbles

    return load_rumbles(values["RUMBLES_FILE"])


@click.group()
def participants() -> None:
    """The participants lists rumble serves at /Participants and their jars."""


@participants.command("add")
@db_option
@click.option("--game", required=True, help="The rumble whose list the jars enter (a division: its general rumble's).")
@click.option("--name", default=None, help="The bot and version ('pkg.Bot 1.0'), for one jar; else read from each jar.")
@click.option("--owner", default=None, help="The competitor account that owns a package entered for the first time.")
@click.argument("jars", nargs=-1, required=True, type=click.Path(exists=True, dir_okay=False, path_type=Path))
def add(db: str | None, game: str, name: str | None, owner: str | None, jars: tuple[Path, ...]) -> None:
    """Enter JARS in the list of GAME, checked as a competitor's are, listed at once (a new version
    replaces the old one, which is retired). Each jar's name is the one bot its .properties (or
    .team) names, unless --name gives it. Refused jars are named with why; exit status 1 if any."""
    from rumble.ingest import entries
    from rumble.store import competitors

    if name is not None and len(jars) != 1:
        raise click.BadParameter("--name names one jar; give one JAR with it", param_hint="--name")
    values, conn = _open(db)
    try:
        who = _maintainer(conn)
        owner_id = None
        if owner is not None:
            found = [row for row in competitors.accounts(conn) if row["name"] == owner and row["revoked_at"] is None]
            if not found:
                raise click.ClickException(f"no competitor account {owner!r} with a valid token")
            owner_id = found[0]["id"]
        refused = add_jars(conn, values, game, jars, entries.Actor(who=who, maintainer=True), name, owner_id)
    finally:
        conn.close()
    if refused:
        raise click.ClickException(f"{refused} of {len(jars)} jars refused")


def add_jars(
    conn: store.Store,
    values: dict,
    game: str,
    jars: tuple[Path, ...] | list[Path],
    actor,
    name: str | None = None,
    owner_id: int | None = None,
    report: bool = True,
) -> int:
    """Enter ``jars`` in the list of ``game`` as ``actor`` (a maintainer), each checked as a
    competitor's is and listed at once, with a progress bar for many; return how many were refused
    (each named with why; each listed one too with ``report``). ``rumble participants add`` and the
    demo data (``rumble demo``) use it."""
    from rumble.ingest import entries
    from rumble.ingest.jar_check import JarRefused, Limits, check_jar, names_in

    rumbles = _rumbles(values)
    try:
        family = entries.family_of(rumbles, game)
    except entries.Refused as error:
        raise click.ClickException(str(error)) from None
    limits = Limits(values["MAX_JAR_BYTES"], values["MAX_JAR_FILES"], values["MAX_JAR_UNPACKED_BYTES"])
    refused = 0
    for path in tqdm(jars, desc="jars", unit="jar", disable=None if len(jars) > 1 else True):
        try:
            if path.stat().st_size > limits.size:
                raise JarRefused(f"the jar is {path.stat().st_size} bytes; at most {limits.size} are taken")
            content = path.read_bytes()
            bot = name
            if bot is None:
                named = names_in(content, family.teams, limits)
                if len(named) != 1:
                    raise JarRefused(
                        f"the jar names {len(named)} bots ({', '.join(named) or 'none'}): give --name for it"
                    )
                (bot,) = named
            checked = check_jar(content, bot, family.teams, limits)
            result = entries.enter(conn, rumbles, game, checked, content, actor, False, 0, _now(), owner=owner_id)
        except (JarRefused, entries.Refused) as error:
            refused += 1
            tqdm.write(f"{path}: refused: {error}")
            continue
        replaced = f", replacing {result['replaced']}" if result["replaced"] else ""
        if report:
            tqdm.write(f"{path}: {result['name']} listed in {result['game']} (SHA-256 {result['sha256']}){replaced}")
    return refused


@participants.command("list")
@db_option
@click.option("--game", required=True, help="The rumble whose list to print.")
@click.option("--pending", is_flag=True, help="The entries waiting for approval instead.")
def list_(db: str | None, game: str, pending: bool) -> None:
    """Print the list of GAME: name, owner, SHA-256, one a line (tab-separated)."""
    from rumble.ingest import entries
    from rumble.store import jars

    values, conn = _open(db)
    try:
        _maintainer(conn)
        try:
            family = entries.family_of(_rumbles(values), game)
        except entries.Refused as error:
            raise click.ClickException(str(error)) from None
        rows = jars.entries(conn, family.name, ("pending",) if pending else ("listed",))
    finally:
        conn.close()
    for row in rows:
        click.echo(f"{row['name']}\t{row['owner'] or 'maintainers'}\t{row['sha256']}")


def _entry_command(action: str):
    """``withdraw``, ``approve``: one entry of a list, by name, audited."""

    @participants.command(
        action, help=f"{action.capitalize()} NAME ('pkg.Bot 1.0') in the list of GAME, as /Participants/{action} does."
    )
    @db_option
    @click.option("--game", required=True)
    @click.argument("name")
    def command(db: str | None, game: str, name: str) -> None:
        from rumble.ingest import entries

        values, conn = _open(db)
        try:
            actor = entries.Actor(who=_maintainer(conn), maintainer=True)
            change = entries.withdraw if action == "withdraw" else entries.approve
            try:
                result = change(conn, _rumbles(values), game, name, actor, _now())
            except entries.Refused as error:
                raise click.ClickException(str(error)) from None
        finally:
            conn.close()
        retired = f"; retired from {', '.join(result['retired'])}" if result["retired"] else ""
        click.echo(f"{name}: {result['state']} in {result['game']}{retired}")

    return command


_entry_command("withdraw")
_entry_command("approve")


@participants.command("refuse")
@db_option
@click.option("--game", required=True)
@click.option("--reason", default="", help="Why, shown on the jar's page.")
@click.argument("name")
def refuse(db: str | None, game: str, reason: str, name: str) -> None:
    """Refuse NAME's entry waiting for approval in the list of GAME."""
    from rumble.ingest import entries

    values, conn = _open(db)
    try:
        actor = entries.Actor(who=_maintainer(conn), maintainer=True)
        try:
            entries.refuse(conn, _rumbles(values), game, name, reason, actor, _now())
        except entries.Refused as error:
            raise click.ClickException(str(error)) from None
    finally:
        conn.close()
    click.echo(f"{name}: refused")


@participants.command("approval")
@db_option
@click.argument("required", type=click.Choice(["on", "off"]))
def approval(db: str | None, required: str) -> None:
    """Whether competitors' new entries wait for a maintainer's approval (on) or are listed at once (off)."""
    from rumble.ingest import entries

    _, conn = _open(db)
    try:
        entries.set_approval(conn, required == "on", entries.Actor(who=_maintainer(conn), maintainer=True), _now())
    finally:
        conn.close()
    click.echo(f"new entries {'wait for approval' if required == 'on' else 'are listed at once'}")


@click.group()
def competitor() -> None:
    """Competitors' accounts: each has a token (rmc_...) to enter and withdraw its own bots."""


@competitor.command("create")
@db_option
@click.argument("name")
def create(db: str | None, name: str) -> None:
    """Make the account NAME and print its token (rmc_<id>_<secret>; only the id and a hash are kept: copy it now)."""
    from rumble.store import competitors, maintainers

    name = name.strip()
    problem = competitors.check_name(name)
    if problem is not None:
        raise click.BadParameter(problem, param_hint="NAME")
    _, conn = _open(db)
    try:
        who = _maintainer(conn)
        stamp = store.utc_now()
        with store.write(conn):
            account, token = competitors.add(conn, name, stamp, who, None)
            maintainers.audit(conn, who, "create-competitor", {"competitor": name, "account": account}, 0, stamp)
    except competitors.CompetitorExists as error:
        raise click.ClickException(str(error)) from None
    finally:
        conn.close()
    click.echo(token)


@competitor.command("revoke")
@db_option
@click.argument("name")
def revoke(db: str | None, name: str) -> None:
    """Revoke the account NAME's token (its packages stay its own; a maintainer can still withdraw them)."""
    from rumble.store import competitors, maintainers

    _, conn = _open(db)
    try:
        who = _maintainer(conn)
        stamp = store.utc_now()
        with store.write(conn):
            done = competitors.revoke(conn, name, stamp)
            if done:
                maintainers.audit(conn, who, "revoke-competitor", {"competitor": name}, 0, stamp)
    finally:
        conn.close()
    if not done:
        raise click.ClickException(f"no competitor account {name!r} with a valid token")
    click.echo(f"revoked {name}")


@competitor.command("list")
@db_option
def list_accounts(db: str | None) -> None:
    """List the competitors' accounts: name, created, by whom, revoked (never a token or hash)."""
    from rumble.store import competitors

    _, conn = _open(db)
    try:
        _maintainer(conn)
        rows = competitors.accounts(conn)
    finally:
        conn.close()
    for row in rows:
        state = f"revoked {row['revoked_at'][:19]}" if row["revoked_at"] else "valid"
        click.echo(f"{row['name']}\tcreated {row['created_at'][:19]} by {row['created_by']}\t{state}")
    if not rows:
        click.echo("no competitor accounts")


def register(group: click.Group) -> None:
    """Add these commands to the ``rumble`` group."""
    for command in (participants, competitor):
        group.add_command(command)
