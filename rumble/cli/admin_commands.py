"""The maintainers' commands: ``rumble backup``, ``rumble restore`` and ``rumble admin ...``.

Registered on the main group by ``rumble.cli`` (``register``). Once the database has a maintainer
with a valid token, every one of these commands needs a valid token in the ``RUMBLE_ADMIN_TOKEN``
environment variable (not an option: a command line is visible to every user in ``ps``) and is
audited under that maintainer's name; without one it refuses with exit status 1. A database with
no valid maintainer (a new installation) needs no token, so that the first ``create-token`` can
run; those commands are audited as ``cli:<user>``. Whoever can write the database file can of
course bypass all this; the token makes every change attributable, and keeps the admin commands
of a shared account from running by accident.
"""

from __future__ import annotations

import getpass
import sqlite3
from pathlib import Path

import click
from tqdm import tqdm

from rumble import store
from rumble.cli.options import db_option, open_database, settings_for

TOKEN_VARIABLE = "RUMBLE_ADMIN_TOKEN"

PROGRESS_FROM_PAGES = 25_600  # a progress bar from 100 MiB (at 4 KiB pages) on


def _open(db: str | None) -> tuple[dict, store.Store]:
    values = settings_for(db)
    return values, open_database(values)


def _who() -> str:
    try:
        return f"cli:{getpass.getuser()}"
    except (KeyError, OSError):
        return "cli"


def _maintainer(conn: store.Store) -> str:
    """Who runs this command: the owner of the token in RUMBLE_ADMIN_TOKEN, or ``cli:<user>`` while
    the database has no valid maintainer. Refuses (ClickException) otherwise."""
    import os

    from rumble.admin_tokens import token_id
    from rumble.store.maintainers import any_active, token_owner

    token = os.environ.get(TOKEN_VARIABLE, "").strip()
    if token:
        name = token_owner(conn, token)
        if name is None:
            hint = (
                ""
                if token_id(token)
                else " (tokens now read rmb_<id>_<secret>: one made before migration 0012 must be re-issued)"
            )
            raise click.ClickException(f"the token in {TOKEN_VARIABLE} is not a valid maintainer token{hint}")
        return name
    if any_active(conn):
        raise click.ClickException(
            f"this command needs a maintainer token: set {TOKEN_VARIABLE} (`rumble admin create-token NAME` makes one)"
        )
    return _who()


def _audit(conn: store.Store, action: str, details: dict, who: str | None = None) -> None:
    from rumble.store.maintainers import audit

    with store.write(conn):
        audit(conn, who or _who(), action, details, 0, store.utc_now())


def _bar(desc: str):
    """A tqdm bar fed (done, total) pages, shown only for a large database."""
    bar = None

    def update(done: int, total: int) -> None:
        nonlocal bar
        if bar is None and total >= PROGRESS_FROM_PAGES:
            bar = tqdm(total=total, desc=desc, unit="page", disable=None)
        if bar is not None:
            bar.update(done - bar.n)

    def close() -> None:
        if bar is not None:
            bar.close()

    return update, close


@click.command()
@db_option
@click.option("--force", is_flag=True, help="Overwrite PATH if it exists.")
@click.argument("path", type=click.Path(dir_okay=False, path_type=Path))
def backup(db: str | None, force: bool, path: Path) -> None:
    """Copy the live database to PATH (SQLite's online backup: uploads go on meanwhile)."""
    from rumble.store.backup import backup as copy_out

    if path.exists() and not force:
        raise click.ClickException(f"{path} exists; --force overwrites it")
    values, conn = _open(db)
    try:
        who = _maintainer(conn)
        if Path(values["DB"]).resolve() == path.resolve():
            raise click.ClickException("PATH is the live database itself")
        update, close = _bar("backup")
        try:
            pages = copy_out(conn, path, update)
        finally:
            close()
        _audit(conn, "backup", {"path": str(path.resolve()), "pages": pages}, who)
    finally:
        conn.close()
    click.echo(f"backed up {values['DB']} to {path} ({pages} pages)")


@click.command()
@db_option
@click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
@click.argument("path", type=click.Path(dir_okay=False, exists=True, path_type=Path))
def restore(db: str | None, yes: bool, path: Path) -> None:
    """Replace the live database with the backup at PATH, then apply pending migrations.

    Safe while the server runs: it waits for the write lock, and the workers see the restored
    file from their next request on. Everything written since the backup is lost.
    """
    from rumble.maintenance import swap
    from rumble.store.backup import NotARumbleDatabase, open_backup, prepare
    from rumble.store.backup import restore as copy_in

    try:
        source = open_backup(path)
    except NotARumbleDatabase as error:
        raise click.ClickException(f"{path}: {error}") from None
    try:
        values, conn = _open(db)
        try:
            who = _maintainer(conn)
            if Path(values["DB"]).resolve() == path.resolve():
                raise click.ClickException("PATH is the live database itself")
            if not yes:
                click.confirm(
                    f"Replace {values['DB']} with {path}? Everything written since that backup is lost", abort=True
                )
            update, close = _bar("restore")
            prepared = None
            try:
                prepared = prepare(source, values["DB"], update)  # aside: uploads go on meanwhile
                with swap.one_at_a_time(conn):  # not in the middle of a rebuild or rollback's swap
                    copy_in(conn, prepared)
            except sqlite3.OperationalError as error:  # e.g. a page size the live WAL file cannot take
                raise click.ClickException(f"could not restore {path}: {error}") from None
            finally:
                close()
                if prepared is not None:
                    prepared.unlink(missing_ok=True)
        finally:
            conn.close()
    finally:
        source.close()
    _, conn = _open(db)  # applies the migrations the backup lacks and records the rumbles
    try:
        _audit(conn, "restore", {"path": str(path.resolve()), "by": who}, who)
    finally:
        conn.close()
    click.echo(f"restored {values['DB']} from {path}")


@click.group()
def admin() -> None:
    """Maintainer tokens, and flagging, unflagging and rolling back battles."""


@admin.command("create-token")
@db_option
@click.argument("name")
def create_token(db: str | None, name: str) -> None:
    """Make a new token for maintainer NAME and print it (rmb_<id>_<secret>; only the id and a hash are kept: copy it now)."""
    from rumble.admin_tokens import hash_token, new_token, token_id
    from rumble.store.maintainers import MaintainerExists, add_maintainer, audit

    name = name.strip()
    if not name or len(name) > 100:
        raise click.BadParameter("a name of 1 to 100 characters", param_hint="NAME")
    token = new_token()
    new_id = token_id(token)
    assert new_id is not None  # a new token always carries its id
    _, conn = _open(db)
    try:
        who = _maintainer(conn)
        with store.write(conn):
            add_maintainer(conn, name, new_id, hash_token(token), store.utc_now())
            audit(conn, who, "create-token", {"maintainer": name}, 0, store.utc_now())
    except MaintainerExists as error:
        raise click.ClickException(str(error)) from None
    finally:
        conn.close()
    click.echo(token)


@admin.command()
@db_option
@click.argument("name")
def revoke(db: str | None, name: str) -> None:
    """Revoke maintainer NAME's token and end its browser sessions at once."""
    from rumble.store.maintainers import audit
    from rumble.store.maintainers import revoke as revoke_token

    _, conn = _open(db)
    try:
        who = _maintainer(conn)
        with store.write(conn):
            done = revoke_token(conn, name, store.utc_now())
            if done:
                audit(conn, who, "revoke", {"maintainer": name}, 0, store.utc_now())
    finally:
        conn.close()
    if not done:
        raise click.ClickException(f"no maintainer {name!r} with a valid token")
    click.echo(f"revoked {name}")


@admin.command("list")
@db_option
def list_(db: str | None) -> None:
    """List the maintainers: name, created, revoked (never a token or its hash)."""
    from rumble.store.maintainers import maintainers

    _, conn = _open(db)
    try:
        _maintainer(conn)
        rows = maintainers(conn)
    finally:
        conn.close()
    for row in rows:
        click.echo(
            f"{row['name']}\tcreated {row['created_at'][:19]}\t"
            + (f"revoked {row['revoked_at'][:19]}" if row["revoked_at"] else "valid")
        )
    if not rows:
        click.echo("no maintainers; `rumble admin create-token NAME` makes one")


def _uploader_word(standing: str, action: str, summary: str):
    """``rumble admin vouch`` and ``revoke-uploader``: a maintainer's word on an uploader, audited."""

    @admin.command(action.replace(" ", "-"), help=summary)
    @db_option
    @click.argument("uploader")
    @click.argument("network")
    @click.option("--note", default="", help="why, for the audit log and /admin")
    def command(db: str | None, uploader: str, network: str, note: str) -> None:
        from rumble.rankings.uploader_trust import named_party
        from rumble.store import maintainers, trust

        try:
            party = named_party(uploader, network)
        except ValueError as error:
            raise click.BadParameter(str(error)) from None
        _, conn = _open(db)
        try:
            who = _maintainer(conn)
            with store.write(conn):
                trust.set_word(conn, party, standing, who, store.utc_now(), note)
                maintainers.audit(conn, who, action, {"party": party, "note": note, "via": "cli"}, 0, store.utc_now())
        finally:
            conn.close()
        click.echo(f"{party}: {standing}")

    return command


_uploader_word(
    "vouched",
    "vouch",
    "Vouch for UPLOADER sending from NETWORK (an address or a network of it): established in every rumble at once.",
)
_uploader_word("revoked", "revoke uploader", "Revoke UPLOADER at NETWORK: never established, whatever it earned.")


@admin.command()
@db_option
@click.option("--game", default=None, help="one rumble (default: every rumble with battles)")
def standings(db: str | None, game: str | None) -> None:
    """Compute the uploaders' standings now (the hourly run does it too) and print them."""
    from rumble.schedule import hourly
    from rumble.store import trust
    from rumble.store.rumbles import rumble_id

    _, conn = _open(db)
    try:
        _maintainer(conn)
        counted = hourly.refresh_standings(conn, [game] if game else None)
        for name in counted:
            click.echo(f"{name}: {counted[name]} established")
            for party, row in sorted(trust.standings(conn, rumble_id(conn, name) or 0).items()):
                click.echo(f"  {party}\t{row['how']}\t{row['why']}")
    finally:
        conn.close()


def _battle_command(action: str, summary: str):
    """``rumble admin flag|unflag|rollback``: the same criteria as the /admin forms."""

    @admin.command(
        action, help=summary + "\n\nAll the criteria given must match; at least one besides --game is required."
    )
    @db_option
    @click.option("--game", default=None, help="Only this rumble's battles.")
    @click.option("--uploader", default=None, help="The client's USER, exactly.")
    @click.option("--remote-addr", default=None, help="The uploading address, exactly.")
    @click.option("--client", default=None, help="The Robocode client version, exactly (e.g. 1.9.3.9).")
    @click.option("--since", default=None, help="Received at or after this UTC time (2026-11-22 or 2026-11-22 16:05).")
    @click.option("--until", default=None, help="Received before this UTC time.")
    @click.option("--ids", default=None, help="Battle ids, separated by commas.")
    @click.option("--dry-run", is_flag=True, help="Only count the battles it would change.")
    def command(db, game, uploader, remote_addr, client, since, until, ids, dry_run) -> None:
        from rumble.maintenance import integrity, jobs, swap
        from rumble.protocol.games import load_rumbles
        from rumble.store.maintainers import audit

        values, conn = _open(db)
        try:
            who = _maintainer(conn)
            try:
                selection = integrity.make_filter(
                    game,
                    uploader,
                    remote_addr,
                    client,
                    since,
                    until,
                    ids,
                    known_games=load_rumbles(values["RUMBLES_FILE"]),
                )
            except integrity.FilterError as error:
                raise click.UsageError(str(error)) from None
            details = {"via": "cli", "dry_run": dry_run}
            if who != _who():
                details["user"] = _who()
            if dry_run:
                with store.write(conn):
                    outcome = integrity.change_battles(
                        conn, action, selection, values["PRIORITY_MIN_BATTLES"], dry_run=True
                    )
                    audit(
                        conn,
                        who,
                        action,
                        {**details, "criteria": selection.describe(), "per_rumble": outcome.moved},
                        0,
                        store.utc_now(),
                    )
            else:  # recomputed aside and swapped in, audited per rumble: uploads go on meanwhile
                with store.read(conn):
                    max_id = jobs.newest_battle(conn)
                with tqdm(desc=action, unit="battle", disable=None) as bar:
                    shown: list[str | None] = [None]

                    def progress(game: str, done: int, total: int) -> None:
                        if shown[0] != game:  # a new rumble: its own count
                            shown[0] = game
                            bar.reset(total)
                            bar.set_description(f"{action} {game}")
                        bar.update(done - bar.n)

                    try:
                        outcome = jobs.change_battles(
                            conn, action, selection, max_id, values["PRIORITY_MIN_BATTLES"], who, details, progress
                        )
                    except swap.Conflict as error:
                        raise click.ClickException(str(error)) from None
        finally:
            conn.close()
        verb = "would change" if dry_run else "changed"
        click.echo(
            f"{action}: {verb} {outcome.battles} battles" + "".join(f"\n  {g}: {n}" for g, n in outcome.moved.items())
        )

    return command


_battle_command("flag", "Flag battles: held for review and no longer counted; the rumbles are recomputed.")
_battle_command(
    "rollback", "Roll back battles: marked removed (never deleted); the rumbles are recomputed without them."
)
_battle_command("unflag", "Unflag battles (flagged or rolled back): they count again; the rumbles are recomputed.")


def register(group: click.Group) -> None:
    """Add these commands to the ``rumble`` group."""
    for command in (backup, restore, admin):
        group.add_command(command)
