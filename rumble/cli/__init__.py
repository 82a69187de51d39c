"""The ``rumble`` command: serve, demo, rebuild, import, export, migrate, rank, batch (and, from
``rumble.cli.admin_commands``, backup, restore and admin)."""

from __future__ import annotations

import csv
import json
import logging
import math
import os
import resource
import sys
import threading
from pathlib import Path

import click
from tqdm import tqdm

from rumble.cli.admin_commands import register as register_admin_commands
from rumble.cli.options import db_option, open_database, settings_for
from rumble.cli.participant_commands import register as register_participant_commands
from rumble.protocol.games import load_rumbles
from rumble.rankings.batch import METHODS

REMOVALS_BUSY = "OK. ERROR: too many RemoveOldParticipant requests at once; try again later\n"


@click.group()
@click.version_option(package_name="rumble")
def cli() -> None:
    """rumble: a RoboRumble-style competition server."""


@cli.command()
@db_option
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option("--port", default=8000, show_default=True, type=int, help="Port to listen on.")
@click.option(
    "--workers",
    default=min(os.cpu_count() or 2, 8),
    show_default="the CPU cores, at most 8",
    type=click.IntRange(1, 64),
    help="gunicorn worker processes. Writes are serialised, so more workers than cores only add contention.",
)
@click.option("--demo", is_flag=True, help="Load demo data first if the database has no battles.")
def serve(db: str | None, host: str, port: int, workers: int, demo: bool) -> None:
    """Run the server (gunicorn) on an SQLite database."""
    from gunicorn.app.base import BaseApplication

    from rumble.app import create_app

    values = settings_for(db)
    os.environ["RUMBLE_DB"] = values["DB"]  # the workers build their app from the same settings
    _log_to_stderr(logging.INFO)  # the batch schedule's runs; the workers inherit it
    conn = open_database(values)
    from rumble.store.battle_log import count_battles

    empty = count_battles(conn) == 0
    conn.close()
    click.echo(f"rumble: database {values['DB']}")
    if empty and demo:
        _load_demo(values)
    elif empty:
        click.echo("rumble: the database has no battles yet; `rumble serve --demo` (or `rumble demo`) loads demo data.")
    from rumble.ratings.online import warm_up

    warm_up()  # compiled (or read from numba's cache) once here, before the workers fork
    if values["CONNECTIONS"] < 1:
        raise click.ClickException(f"CONNECTIONS must be at least 1, not {values['CONNECTIONS']}")
    connections = _connection_limit(values["CONNECTIONS"])
    from rumble.app import attach_writer, save_counts, save_counts_every, wrap_page_builds
    from rumble.ingest import fields
    from rumble.server import single_writer

    # The writer process for uploads, replaced while the server runs should it end or hang.
    writer = single_writer.Supervisor(values["DB"], values["SYNCHRONOUS"], ready=fields.preload_all)
    # The batch schedule in a process of its own: its runs take seconds of CPU, which in a worker
    # would hold up every request of that worker (one thread runs all its greenlets).
    schedule = _start_schedule(values)
    click.echo(f"rumble: serving http://{host}:{port}/ with {workers} workers (Ctrl-C stops)")

    class Server(BaseApplication):
        def load_config(self) -> None:
            self.cfg.set("bind", f"{host}:{port}")
            self.cfg.set("workers", workers)
            # A greenlet per connection; rumble/server/serving.py says why, and what bounds each wait.
            self.cfg.set("worker_class", "gevent")
            self.cfg.set("worker_connections", connections)
            self.cfg.set(
                "keepalive", math.ceil(values["READ_TIMEOUT_SECONDS"])
            )  # also bounds the wait for each request's headers
            self.cfg.set("sendfile", False)  # answers go out through the app's iterable, whose blocks are timed
            # Only TRUSTED_PROXIES (werkzeug's ProxyFix in rumble.app) decides what forwarded headers mean.
            self.cfg.set("secure_scheme_headers", {})
            self.cfg.set("accesslog", None)
            self.cfg.set("timeout", 60)  # the worker's heartbeat (its main loop), not a limit on a request
            self.cfg.set("graceful_timeout", 30)
            # A stopping worker saves its upload and refusal counts (else kept until a later request).
            self.cfg.set("worker_exit", lambda server, worker: save_counts(values["DB"]))
            if "control_socket_disable" in self.cfg.settings:  # gunicorn 27+: one shared ~/.gunicorn socket otherwise
                self.cfg.set("control_socket_disable", True)

        def load(self):
            from rumble.protocol import CLIENT_PATHS
            from rumble.server.serving import Deadlines, Paced, PagesInThreads

            single_writer.yield_cpu_to_writer()
            # The ratings copies are read before the first request, so that no upload or removal waits for it.
            app = create_app(preload_fields=True)
            attach_writer(app, writer)  # uploads' transactions, and the writer's state for /healthz and /metrics
            # The worker's upload and refusal counts, saved every COUNTS_SAVE_SECONDS whether or not
            # another request comes (a thread, that is a greenlet under gevent).
            threading.Thread(target=save_counts_every, args=(app,), name="counts", daemon=True).start()
            if values["PAGES_IN_THREADS"]:
                # Between the kept pages (answered in the connection's greenlet) and the app: only
                # pages built anew take a thread. Two threads more than the page slots
                # (rumble.web.capacity), which answer the requests over them 503.
                threads = values["PAGE_REQUESTS"] + 2
                wrap_page_builds(
                    app, lambda inner: PagesInThreads(inner, threads, lambda path: path not in CLIENT_PATHS)
                )
            # RemoveOldParticipant: 4 at a time per worker, each at least 50 ms (80 a second per worker).
            paced = Paced(app, frozenset({"/RemoveOldParticipant"}), 4, 0.05, 64, REMOVALS_BUSY)
            return Deadlines(paced, values["READ_TIMEOUT_SECONDS"], values["SEND_TIMEOUT_SECONDS"])

    try:
        Server().run()
    finally:
        writer.stop()
        if schedule is not None:
            schedule.stop()


def _start_schedule(values: dict):
    """``rumble schedule`` for the database of ``values`` as a child process, started again should
    it end while the server runs (rumble.server.kept_process); None if BATCH_INTERVAL_MINUTES is 0."""
    from rumble.server.kept_process import KeptProcess

    if float(values["BATCH_INTERVAL_MINUTES"]) <= 0:
        return None
    command = [sys.executable, "-m", "rumble", "schedule", "--db", values["DB"], "--parent", str(os.getpid())]
    return KeptProcess("batch schedule", lambda: os.posix_spawn(sys.executable, command, os.environ))


@cli.command()
@db_option
@click.option("--parent", type=int, default=None, help="End when this process has ended (rumble serve's own).")
def schedule(db: str | None, parent: int | None) -> None:
    """Run the batch rankings and the melee sweep on their schedule, in the foreground.

    ``rumble serve`` runs it beside its workers, as a process of its own."""
    import signal
    import time

    from rumble.schedule.hourly import start_scheduler

    values = settings_for(db)
    _log_to_stderr(logging.INFO)
    signal.signal(signal.SIGINT, signal.SIG_IGN if parent is not None else signal.default_int_handler)
    running = start_scheduler(values)
    if running is None:
        click.echo("rumble: BATCH_INTERVAL_MINUTES is 0: nothing to schedule")
        return
    while parent is None or os.getppid() == parent:
        time.sleep(1.0)


def _connection_limit(wanted: int = 1000) -> int:
    """Connections one worker holds at most (gunicorn's worker_connections, 1000 by default), within
    the open-files limit, which is first raised to its hard limit: an ``accept`` past that limit
    would fail. Each connection holds a file, and each upload under way one more (its connection
    to the writer process, rumble.server.single_writer)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = 2 * wanted + 100
    if soft != resource.RLIM_INFINITY and soft < target:
        soft = target if hard == resource.RLIM_INFINITY else min(target, hard)
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    if soft == resource.RLIM_INFINITY:
        return wanted
    return max(16, min(wanted, (soft - 100) // 2))


def _log_to_stderr(level: int) -> None:
    """Show rumble's log records of ``level`` and above on stderr (once per process)."""
    logger = logging.getLogger("rumble")
    if not logger.handlers:
        handler = logging.StreamHandler()
        handler.setFormatter(logging.Formatter("%(asctime)s [%(process)d] %(levelname)s %(name)s: %(message)s"))
        logger.addHandler(handler)
    logger.setLevel(level)


def _load_demo(values: dict, count: int = 600) -> None:
    """The demo battles, then the demo robots' jars on roborumble's participants list (as
    ``rumble participants add`` enters them, audited as the maintainer "demo")."""
    import tempfile

    from rumble.cli.participant_commands import add_jars
    from rumble.ingest.entries import Actor
    from rumble.maintenance.demo import load_demo, write_demo_jars
    from rumble.protocol.games import load_rumbles

    rumble = load_rumbles(values["RUMBLES_FILE"]).get("roborumble")
    if rumble is None:
        raise click.ClickException("the demo needs a rumble called roborumble in the rumbles file")
    conn = open_database(values)
    try:
        with tqdm(total=count, desc="demo battles", unit="battle", disable=None) as bar:
            stored = load_demo(conn, rumble.name, rumble.rounds, rumble.field, count, bar.update)
        with tempfile.TemporaryDirectory(prefix="rumble-demo-jars-") as folder:
            jars = write_demo_jars(Path(folder))
            refused = add_jars(conn, values, rumble.name, jars, Actor(who="demo", maintainer=True), report=False)
    finally:
        conn.close()
    click.echo(f"rumble: loaded {stored} demo battles into {rumble.name}")
    click.echo(
        f"rumble: listed {len(jars) - refused} demo robots on its participants list (/Participants?game={rumble.name})"
    )


@cli.command()
@db_option
@click.option(
    "--battles", default=600, show_default=True, type=click.IntRange(1, 100_000), help="How many demo battles."
)
def demo(db: str | None, battles: int) -> None:
    """Load demo data: a roborumble of 20 invented robots."""
    _load_demo(settings_for(db), battles)


@cli.command()
@db_option
def migrate(db: str | None) -> None:
    """Create the database or apply pending migrations, and list them."""
    from rumble.store.migrations import applied

    conn = open_database(settings_for(db))
    for name in applied(conn):
        click.echo(name)
    conn.close()


@cli.command()
@db_option
@click.option("--game", default=None, help="Rebuild only this rumble (default: all).")
def rebuild(db: str | None, game: str | None) -> None:
    """Recompute pairings, summaries and ratings from the battle log (uploads go on meanwhile)."""
    from rumble.maintenance import swap
    from rumble.overrides import load as load_overrides
    from rumble.protocol.games import load_rumbles
    from rumble.store.battle_log import count_battles
    from rumble.store.rumbles import rumble_id

    values = settings_for(db)
    rumbles = load_rumbles(values["RUMBLES_FILE"])
    if game is not None and game not in rumbles:
        raise click.BadParameter(f"no rumble called {game!r}; known: {', '.join(rumbles)}", param_hint="--game")
    conn = open_database(values)
    try:
        for name in [game] if game else list(rumbles):
            total = count_battles(conn, rumble_id(conn, name))
            if not total and not game:
                continue
            rounds = load_overrides(conn).rumble(rumbles[name]).rounds  # as set from /admin, if it was
            with tqdm(total=total, desc=f"rebuild {name}", unit="battle", disable=None) as bar:
                try:
                    with swap.one_at_a_time(conn):
                        job = swap.recompute(conn, name, rounds, values["PRIORITY_MIN_BATTLES"], bar.update)
                except swap.Conflict as error:
                    raise click.ClickException(str(error)) from None
            click.echo(
                f"{name}: replayed {job.replay.replayed} battles in {job.aside_seconds:.2f} s beside the uploads;"
                f" the swap held the write lock {job.locked_seconds * 1000:.1f} ms"
            )
    finally:
        conn.close()


@cli.command(name="run-job")
@db_option
@click.argument("job_id", type=int)
def run_job(db: str | None, job_id: int) -> None:
    """Run maintenance job JOB_ID as recorded by /admin (the server starts this itself)."""
    from rumble.maintenance.jobs import run

    values = settings_for(db)
    try:
        found = run(values["DB"], job_id, values["SYNCHRONOUS"])
    except LookupError as error:
        raise click.ClickException(str(error)) from None
    click.echo(f"job {job_id}: {found['state']}" + (f": {found['error']}" if found["error"] else ""))
    if found["state"] != "done":
        sys.exit(1)


@cli.command(name="import")
@db_option
@click.argument("file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
def import_(db: str | None, file: Path) -> None:
    """Load a battle log (CSV or JSONL with the log's columns) through the upload path.

    The whole file is checked first; if any row is bad, nothing is imported. Rows already in the
    log (the same game, uploader, time, bots and figures) are skipped.
    """
    from rumble.maintenance.importer import ImportError_, read_battles, store_battles
    from rumble.protocol.games import load_rumbles

    values = settings_for(db)
    rumbles = load_rumbles(values["RUMBLES_FILE"])
    try:
        battles = read_battles(file, rumbles)
    except ImportError_ as error:
        raise click.ClickException(str(error)) from None
    conn = open_database(values)
    try:
        with tqdm(total=len(battles), desc="import", unit="battle", disable=None) as bar:
            stored = store_battles(conn, battles, rumbles, values["PRIORITY_MIN_BATTLES"], bar.update)
    finally:
        conn.close()
    click.echo(f"imported {stored} battles from {file} ({len(battles) - stored} already in the log)")


@cli.command()
@db_option
@click.option("--game", default=None, help="Only this rumble's battles.")
@click.option("--format", "fmt", type=click.Choice(["jsonl", "csv"]), default="jsonl", show_default=True)
@click.argument("file", type=click.File("w", encoding="utf-8"), default="-")
def export(db: str | None, game: str | None, fmt: str, file) -> None:
    """Write the battle log (CSV or JSONL, the columns `rumble import` reads)."""
    from rumble.store.battle_log import LOG_COLUMNS, log_rows
    from rumble.store.rumbles import rumble_id

    conn = open_database(settings_for(db))
    try:
        rid = None
        if game is not None:
            rid = rumble_id(conn, game)
            if rid is None:
                raise click.BadParameter(f"no rumble called {game!r}", param_hint="--game")
        if fmt == "csv":
            writer = csv.DictWriter(file, fieldnames=LOG_COLUMNS, lineterminator="\n")
            writer.writeheader()
            writer.writerows(log_rows(conn, rid))
        else:
            for row in log_rows(conn, rid):
                file.write(json.dumps(row, ensure_ascii=False) + "\n")
    finally:
        conn.close()


RANK_METHODS = ("all", *METHODS)  # rumble rank --method


@cli.command()
@db_option
@click.option("--game", default=None, help="Rank this rumble's active bots by their pairing APS and store the run.")
@click.option(
    "--matrix",
    "matrix_file",
    default=None,
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="Rank the pairwise matrix of this CSV file instead (nothing is stored).",
)
@click.option(
    "--method",
    default="all",
    show_default=True,
    type=click.Choice(RANK_METHODS),
    help="One method (npp ranks by ANPP), or all of them.",
)
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
@click.option("--csv", "as_csv", is_flag=True, help="Print CSV instead of a table.")
def rank(db: str | None, game: str | None, matrix_file: Path | None, method: str, as_json: bool, as_csv: bool) -> None:
    """Rank a rumble (--game) or a pairwise matrix (--matrix FILE.csv) by the batch methods.

    A --game run is stored like a scheduled one (its time and the battles it saw), so the
    Rankings and AlternativeRankings pages show it; --method all also stores each pairing's
    KNNPBI and NPP. The table lists each bot's rank (and score, where the method has one) per
    method; for a rumble the APS rank comes first. Bots without a pairing are listed unranked.

    The CSV: a header row of names (after an optional corner cell), then one row per name whose
    first cell is the name; a cell is the row's score against the column, an empty cell a
    missing pairing.
    """
    from rumble.cli.matrix_io import format_csv, format_json, format_table, result_rows

    if (game is None) == (matrix_file is None):
        raise click.UsageError("give either --game G or --matrix FILE.csv")
    if as_json and as_csv:
        raise click.UsageError("--json and --csv exclude each other")
    methods = RANK_METHODS[1:] if method == "all" else (method,)
    with tqdm(total=len(methods), desc="rank", unit="method", disable=None, delay=1.0) as bar:
        progress = lambda _: bar.update(1)  # noqa: E731
        if game is not None:
            names, kept, ranks, failures = _rank_game(db, game, method, progress)
        else:
            assert matrix_file is not None  # exactly one of the two, checked above
            names, kept, ranks, failures = _rank_file(matrix_file, methods, progress)
    for name, reason in failures.items():
        click.echo(f"rumble rank: {name} failed: {reason}", err=True)
    if len(failures) == len(methods):
        raise click.ClickException("no method could rank these pairings")
    rows = result_rows(names, kept, ranks)
    click.echo((format_json if as_json else format_csv if as_csv else format_table)(rows), nl=False)


def _rank_game(db: str | None, game: str, method: str, progress):
    from rumble.schedule.hourly import run_rumble

    values = settings_for(db)
    if game not in load_rumbles(values["RUMBLES_FILE"]):
        raise click.BadParameter(f"no rumble called {game!r}", param_hint="--game")
    conn = open_database(values)
    try:
        report = run_rumble(conn, game, None if method == "all" else (method,), progress=progress)
    finally:
        conn.close()
    ranked = report.ranked
    click.echo(
        f"{game}: stored as batch run {report.run_id}: {int(ranked.kept.sum())} bots, "
        f"{report.seen.battles} battles, {report.seconds:.1f} s",
        err=True,
    )
    return report.names, ranked.kept, ranked.ranks, ranked.failures


def _rank_file(path: Path, methods: tuple[str, ...], progress):
    from rumble.cli.matrix_io import MatrixFileError, read_matrix_csv
    from rumble.schedule.hourly import rank_matrix

    try:
        names, d = read_matrix_csv(path.read_text(encoding="utf-8-sig"))
    except (MatrixFileError, UnicodeDecodeError) as error:
        raise click.ClickException(f"{path} is not a pairwise matrix:\n{error}") from None
    ranked = rank_matrix(d, methods, progress=progress)
    ranks = {name: ranking for name, ranking in ranked.ranks.items() if name != "aps"}
    return names, ranked.kept, ranks, ranked.failures


@cli.command()
@db_option
def batch(db: str | None) -> None:
    """Run the batch rankings once for every rumble whose log changed since its last run, then what the
    schedule does after them (standings, holds of flagged uploaders' battles, the pages' stored tables,
    export snapshots): a schedule of its own, from cron, for a server run without `rumble schedule`."""
    from rumble.schedule.hourly import COMMAND_LINE, after_runs, run_stale, take_daily_snapshot

    _log_to_stderr(logging.WARNING)  # a rumble that fails is logged and skipped
    settings = settings_for(db)
    conn = open_database(settings)
    try:
        take_daily_snapshot(conn)
        reports = run_stale(conn, COMMAND_LINE)
        rewritten = after_runs(conn, settings)
    finally:
        conn.close()
    for r in reports:
        click.echo(
            f"{r.game}: batch run {r.run_id}, {int(r.ranked.kept.sum())} bots, {r.seen.battles} battles, {r.seconds:.1f} s"
        )
    if not reports:
        click.echo("no rumble changed since its last batch run")
    if rewritten:
        click.echo(f"export snapshots rewritten: {', '.join(rewritten)}")


@click.command(name="settings")
@db_option
def show_settings(db: str | None) -> None:
    """Print every setting's value and where it came from: default, environment (RUMBLE_<NAME>),
    --db, or set from /admin (stored in the database). The README's Settings section says what each means.

    The database is only read (not created, not migrated). Secrets are never printed: the cookie-signing
    key and the token hashes stay in the database, and of RUMBLE_ADMIN_TOKEN only the public id is shown.
    """
    from rumble import settings
    from rumble.admin_tokens import describe
    from rumble.cli.admin_commands import TOKEN_VARIABLE
    from rumble.overrides import RUMBLE_KEYS, SERVER, Effective
    from rumble.protocol.games import DEFAULT_RUMBLES_FILE, ConfigError
    from rumble.schedule.exports import directory

    unreadable = []
    for setting in settings.SETTINGS:
        raw = os.environ.get("RUMBLE_" + setting.name)
        try:
            if raw is not None:
                setting.parse(raw)
        except ValueError as error:
            unreadable.append(f"RUMBLE_{setting.name}={raw!r}: {error}")
    if unreadable:
        raise click.ClickException("these environment variables are not valid:\n  " + "\n  ".join(unreadable))
    given = {"DB": db} if db else None
    values = settings.load(given)
    origins = {name: _origin_words(origin) for name, origin in settings.origins(given).items()}
    stored, note = _stored_settings(values["DB"])
    try:
        rumbles = load_rumbles(values["RUMBLES_FILE"])
    except (ConfigError, OSError) as error:
        raise click.ClickException(f"cannot read the rumbles file: {error}") from None

    shown = {setting.name: _shown(values[setting.name]) for setting in settings.SETTINGS}
    shown["RUMBLES_FILE"] = str(values["RUMBLES_FILE"] or DEFAULT_RUMBLES_FILE)
    shown["EXPORT_DIR"] = str(directory(values))
    shown["CLOCK"] = "the system clock (UTC)"  # never read from the environment: only code (tests) sets another
    if (SERVER, "ACCEPTED_CLIENTS") in stored:
        effective = Effective(stored).accepted_clients(values["ACCEPTED_CLIENTS"])
        origins["ACCEPTED_CLIENTS"] = (
            f"/admin, stored in the database; under it {shown['ACCEPTED_CLIENTS']} from {origins['ACCEPTED_CLIENTS']}"
        )
        shown["ACCEPTED_CLIENTS"] = _shown(effective)
    width = max(len(setting.name) for setting in settings.SETTINGS) + 2
    click.echo("# setting, value (where it came from); what each means: the README's Settings section")
    for setting in settings.SETTINGS:
        click.echo(f"{setting.name:<{width}}{shown[setting.name]}  ({origins[setting.name]})")

    click.echo(f"\n# rumbles, from {shown['RUMBLES_FILE']} and /admin" + (f" ({note})" if note else ""))
    effective_rumbles = Effective(stored).rumbles(rumbles)
    name_width = max((len(name) for name in rumbles), default=0) + 2
    for name, rumble in effective_rumbles.items():
        changed = [key for key in RUMBLE_KEYS if (name, key) in stored]
        where = "rumbles file" + (f"; {', '.join(changed)} from /admin" if changed else "")
        figures = " ".join(f"{key}={_shown(getattr(rumble, key))}" for key in RUMBLE_KEYS)
        click.echo(f"{name:<{name_width}}{figures}  ({where})")

    click.echo("\n# other environment variables rumble reads")
    token = os.environ.get(TOKEN_VARIABLE, "").strip()
    click.echo(f"{TOKEN_VARIABLE}  " + (f"set: {describe(token)}, secret masked" if token else "not set"))
    known = {"RUMBLE_" + setting.name for setting in settings.SETTINGS} | {TOKEN_VARIABLE}
    for variable in sorted(name for name in os.environ if name.startswith("RUMBLE_") and name not in known):
        click.echo(f"{variable}  set, but no setting of that name: ignored (its value is not shown)")


def _origin_words(origin: str) -> str:
    """``rumble.settings.origins``'s answer as ``rumble settings`` prints it."""
    return {"default": "default", "given": "--db"}.get(origin, f"environment {origin}")


def _shown(value: object) -> str:
    """A value as ``rumble settings`` prints it: as its environment variable would spell it."""
    if isinstance(value, tuple):
        return ",".join(str(part) for part in value)
    if isinstance(value, bool):
        return str(value).lower()
    return str(value)


def _stored_settings(path: str) -> tuple[dict, str | None]:
    """The settings maintainers stored from /admin in the database at ``path``, read on a read-only
    connection (nothing is created or migrated), and a note when there can be none."""
    import sqlite3

    from rumble.store import Store, admin_settings

    if not os.path.isfile(path):
        return {}, f"no database at {path} yet, so nothing set from /admin"
    conn = sqlite3.connect(f"{Path(path).resolve().as_uri()}?mode=ro", uri=True)
    try:
        return admin_settings.all_overrides(Store(conn)), None
    except sqlite3.OperationalError as error:
        if "no such table" in str(error):  # a database older than migration 0007
            return {}, "the database predates settings from /admin"
        raise click.ClickException(f"cannot read {path}: {error} (run this as the user the server runs as)") from None
    except sqlite3.DatabaseError as error:
        raise click.ClickException(f"cannot read {path}: {error}") from None
    finally:
        conn.close()


cli.add_command(show_settings)
# `rumble serve --help` names where the settings are documented (set here, beside the command that prints them).
serve.epilog = (
    "Settings (CONNECTIONS, TRUSTED_PROXIES, SYNCHRONOUS, ...) are read from RUMBLE_<NAME> environment variables; "
    "each is documented in the README's Settings section, and `rumble settings` prints every value and where it came from."
)


register_admin_commands(cli)
register_participant_commands(cli)  # rumble participants ..., rumble competitor ...

if __name__ == "__main__":  # pragma: no cover
    sys.exit(cli())
