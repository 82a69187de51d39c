"""Batch rankings on a schedule: rank one rumble or every stale one, and the schedule that does it hourly.

``run_rumble`` reads a rumble's pairing matrix of active bots, runs the batch methods of
``rumble.rankings.batch`` over it and stores the result with its time and the battles it saw;
``run_stale`` does that for every rumble whose log changed since its last complete run. Both are
plain functions: ``rumble rank`` and ``rumble batch`` call them, and so does the schedule.

The schedule runs in exactly one process: ``rumble serve`` starts ``rumble schedule`` beside its
workers, which calls ``start_scheduler``; that tries a non-blocking ``flock`` on
``<db>.scheduler.lock`` every ELECTION_SECONDS, so that of several schedules on one database (two
servers, or a ``rumble schedule`` run by hand) only one runs. The process that gets the lock keeps
the file open for the rest of its life and runs the batch rankings, and every MELEE_SWEEP_SECONDS
the melee sweep (battles whose pairs stopped coming are rated, rumble.ingest.melee.sweep); when it
dies the kernel drops its lock, and another's next attempt takes over.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import IO, Any

import numpy as np

from rumble import store
from rumble.ingest import apply, melee
from rumble.maintenance import jobs
from rumble.rankings import uploader_trust
from rumble.rankings.batch import METHODS, PAIRING_METHODS, WIN_RATE_METHODS
from rumble.rankings.pairwise import Ranking, present, ranks_from_scores
from rumble.rankings.uploader_consistency import POOL, Verdict, consistency_of
from rumble.schedule import exports
from rumble.store import batch_runs, batch_tables, battle_states, bots, ladder_events, maintainers, trust, uploader_sums
from rumble.store.export import log_version
from rumble.store.rumbles import rumble_id, rumble_rows

log = logging.getLogger(__name__)

COMPLETE = (*METHODS, "knnpbi")  # what a complete run computes: every ranking, then the pairing values
MELEE_SWEEP_SECONDS = 60.0  # how often the leader closes melee battles whose pairs stopped coming
ELECTION_SECONDS = 30.0  # how soon a worker takes over the schedule after its runner died
SCHEDULED, COMMAND_LINE = "schedule", "command line"  # batch_runs.source


@dataclass(frozen=True, eq=False)
class Ranked:
    """The methods' results over the bots that have a pairing (``kept``, a mask over the input's bots)."""

    kept: np.ndarray
    ranks: dict[str, Ranking]  # "aps" first, then the methods that succeeded, in the order asked
    failures: dict[str, str] = field(default_factory=dict)
    pairings: dict[str, np.ndarray] | None = None


@dataclass(frozen=True, eq=False)
class Report:
    """One stored run of one rumble."""

    game: str
    run_id: int
    names: list[str]  # the rumble's active bots; ``ranked.kept`` marks those ranked
    ranked: Ranked
    seen: batch_runs.Seen
    seconds: float


def aps_ranking(d: np.ndarray) -> Ranking:
    """The reference order: each bot's mean of its row over its present pairings (its APS), as ranks."""
    met = present(d)
    count = met.sum(axis=1)
    total = np.where(met, d, 0.0).sum(axis=1)
    aps = np.divide(total, count, out=np.full(len(d), np.nan), where=count > 0)
    return Ranking(ranks=ranks_from_scores(aps), scores=aps)


def rank_matrix(
    d: np.ndarray,
    methods: Iterable[str],
    pairing_values: bool = False,
    progress: Callable[[str], None] | None = None,
    wins: np.ndarray | None = None,
) -> Ranked:
    """Run ``methods`` over ``d`` without the bots that have no pairing (they would share rank 1).

    ``wins``: the pairings' win rates in percent, which the WIN_RATE_METHODS (batch Elo) are fitted
    to; without it (a matrix file) they use ``d`` too.

    A method that raises ValueError or ArithmeticError (batch Elo over pairings that split the
    bots into groups, or with no finite maximum) is reported in ``failures``; the others still run.
    ``progress`` is called with each method's name once it is done.
    """
    kept: np.ndarray = np.asarray(present(d).any(axis=1))
    sub = d[np.ix_(kept, kept)]
    sub_wins = sub if wins is None else wins[np.ix_(kept, kept)]
    ranks, failures = {"aps": aps_ranking(sub)}, {}
    for method in methods:
        try:
            ranks[method] = METHODS[method](sub_wins if method in WIN_RATE_METHODS else sub)
        except (ValueError, ArithmeticError) as error:
            failures[method] = str(error)
        if progress:
            progress(method)
    pairings = {name: pairing(sub) for name, pairing in PAIRING_METHODS.items()} if pairing_values else None
    return Ranked(kept, ranks, failures, pairings)


def run_rumble(
    db: store.Store,
    game: str,
    methods: tuple[str, ...] | None = None,
    source: str = COMMAND_LINE,
    progress: Callable[[str], None] | None = None,
) -> Report:
    """Rank ``game`` by ``methods`` (default: a complete run, with KNNPBI and NPP) and store the run."""
    rid = rumble_id(db, game)
    if rid is None:
        raise KeyError(game)
    complete = methods is None
    chosen = tuple(METHODS) if methods is None else methods
    started, clock = store.utc_now(), time.perf_counter()
    with store.read(db):
        matrix, seen = batch_runs.read_matrix(db, rid), batch_runs.seen(db, rid)
    ranked = rank_matrix(matrix.d, chosen, pairing_values=complete, progress=progress, wins=matrix.wins)
    record = batch_runs.RunRecord(
        methods=COMPLETE if complete else chosen,
        source=source,
        started_at=started,
        finished_at=store.utc_now(),
        seen=seen,
        bot_ids=matrix.ids[ranked.kept],
        ranks=ranked.ranks,
        pairings=ranked.pairings,
        failures=ranked.failures,
    )
    with store.write(db):
        run_id = batch_runs.save_run(db, rid, record)
    report = Report(game, run_id, matrix.names, ranked, seen, time.perf_counter() - clock)
    _log_run(report, source)
    return report


def _log_run(report: Report, source: str) -> None:
    log.info(
        "batch rankings of %s (%s): run %d, %d bots, %d battles, %s in %.1f s",
        report.game,
        source,
        report.run_id,
        int(report.ranked.kept.sum()),
        report.seen.battles,
        ", ".join(report.ranked.ranks),
        report.seconds,
    )
    for method, reason in report.ranked.failures.items():
        log.warning("batch rankings of %s: %s failed: %s", report.game, method, reason)


def run_stale(db: store.Store, source: str = SCHEDULED) -> list[Report]:
    """A complete run of every rumble whose log changed since its last one; a failing rumble is logged and skipped."""
    reports = []
    for game in batch_runs.stale_rumbles(db, COMPLETE):
        try:
            reports.append(run_rumble(db, game, source=source))
        except Exception:  # one broken rumble must not starve the others of their hourly run
            log.exception("batch rankings of %s failed", game)
    return reports


def scheduled_run(settings: dict[str, Any]) -> list[Report]:
    """The scheduled run: ``run_stale`` on its own connection to the settings' database, then ``after_runs``."""
    db = store.connect(settings["DB"], settings["SYNCHRONOUS"], migrate=False)
    try:
        take_daily_snapshot(db)
        reports = run_stale(db, SCHEDULED)
        after_runs(db, settings)
        return reports
    finally:
        db.close()


def after_runs(db: store.Store, settings: dict[str, Any]) -> list[str]:
    """What a run of the schedule (and ``rumble batch``) does after the batch rankings: the uploaders'
    standings, the holds of flagged uploaders' battles with the stored uploader tables, the feed's
    stored completions, and the stale export snapshots someone asked for; each step that fails is
    logged and the next one still runs. The export snapshots rewritten (``refresh_exports``)."""
    try:
        refresh_standings(db, unconfirmed_days=settings["UNCONFIRMED_BOT_DAYS"], now=settings["CLOCK"].now())
    except Exception:  # removals then go on by the standings computed before
        log.exception("computing the uploaders' standings failed")
    try:
        hold_flagged(db, settings["PRIORITY_MIN_BATTLES"])
    except Exception:  # the flags stay on /RumbleStats and /admin for a maintainer to act on
        log.exception("holding the flagged uploaders' battles failed")
    try:
        store_completions(db, settings["CLOCK"].now())
    except Exception:  # the feed keeps the completions stored before
        log.exception("storing the new bots' completions failed")
    try:
        return refresh_exports(db, settings)
    except Exception:  # the snapshots are written on request instead
        log.exception("refreshing the export snapshots failed")
        return []


UNCONFIRMED = "unconfirmed: no battle from an established uploader within {days} days of joining"


def refresh_standings(
    db: store.Store, games: list[str] | None = None, unconfirmed_days: int = 0, now: datetime | None = None
) -> dict[str, int]:
    """Compute each rumble's uploader standings (rumble.rankings.uploader_trust) from its sums per
    uploader, address and pairing (rumble.store.uploader_sums.party_totals) and the maintainers' vouches, and store them;
    the established parties per rumble.

    With ``unconfirmed_days``, also retire the bots that joined a rumble once a maintainer had vouched
    for someone, ``unconfirmed_days`` or more before ``now``, and that no established party has reported
    a battle of: newcomers only strangers ever uploaded leave the field again (a flood of invented
    bots from many addresses does not keep its places). Their next accepted upload brings them back,
    as for any retired bot, and the retirement is logged like a removal, so a rebuild replays it."""
    with store.read(db):
        said = trust.words(db)
        trusted_since = trust.first_vouch(db)
        names = [row["name"] for row in rumble_rows(db) if row["battles"]] if games is None else games
    vouched = {w["party"] for w in said if w["standing"] == "vouched"}
    revoked = {w["party"] for w in said if w["standing"] == "revoked"}
    established = {}
    for game in names:
        rid = rumble_id(db, game)
        if rid is None:
            continue
        with store.read(db):
            by_party = uploader_sums.party_totals(db, rid)
        found = uploader_trust.standings_of(by_party, vouched, revoked)
        rows = [{**s.as_dict(), "party": party} for party, s in sorted(found.items())]
        with store.write(db):
            trust.put_standings(db, rid, rows, store.utc_now())
        trusted = {party for party, s in found.items() if s.established}
        established[game] = len(trusted)
        if unconfirmed_days > 0 and trusted and trusted_since is not None:
            _retire_unconfirmed(
                db, rid, uploader_trust.confirmed_of(by_party, trusted), trusted_since, unconfirmed_days, now
            )
    return established


def _retire_unconfirmed(
    db: store.Store, rid: int, confirmed: set[str], trusted_since: str, days: int, now: datetime | None
) -> int:
    """Retire the rumble's active bots that joined from ``trusted_since`` to ``days`` before ``now``
    and are not ``confirmed``; how many."""
    moment = now or datetime.now(UTC)
    until = store.format_time(moment - timedelta(days=days))
    source = UNCONFIRMED.format(days=days)
    with store.write(db):
        retired = [
            name
            for bot, name in bots.joined_between(db, rid, trusted_since, until)
            if name not in confirmed and apply.retire(db, rid, bot, store.format_time(moment), source)
        ]
    if retired:
        log.info("retired %d unconfirmed bots: %s", len(retired), ", ".join(retired[:20]))
    return len(retired)


AUTO_HOLD = "consistency test"  # who the audit log names for battles held automatically


def hold_flagged(db: store.Store, min_battles: int, games: list[str] | None = None) -> dict[str, dict[str, int]]:
    """Hold for review the accepted battles of every uploader the consistency test flags in a rumble
    (rumble.rankings.uploader_consistency; the pooled small uploaders' each, when their pool is
    flagged): a flag action as a maintainer's, recomputed aside and audited, which a maintainer
    releases (unflag) or rolls back from /admin. An uploader with a party a maintainer vouched for,
    or whose battles a maintainer once released by name, is left to the maintainers. Each rumble's
    table, as it stands after the holds, is stored for the pages (rumble.store.batch_tables).
    Battles held per rumble and uploader."""
    with store.read(db):
        said = trust.words(db)
        released = maintainers.released_uploaders(db)
        names = [row["name"] for row in rumble_rows(db) if row["battles"]] if games is None else games
    spared = released | {w["party"].rpartition("@")[0] for w in said if w["standing"] == "vouched"}
    held: dict[str, dict[str, int]] = {}
    for game in names:
        rid = rumble_id(db, game)
        if rid is None:
            continue
        verdicts, version = _verdicts(db, rid)
        pool = next((v for v in verdicts if v.uploader == POOL), None)
        flagged = {v.uploader: v.reason for v in verdicts if v.flagged and v.uploader != POOL}
        if pool is not None and pool.flagged:
            flagged |= {v.uploader: pool.reason for v in verdicts if v.pooled}
        for uploader, reason in sorted(flagged.items()):
            if uploader in spared:
                continue
            details = {"reason": reason, "by": "the scheduled consistency test"}
            outcome = jobs.change_battles(
                db,
                "flag",
                battle_states.BattleFilter(game=game, uploader=uploader),
                jobs.newest_battle(db),
                min_battles,
                AUTO_HOLD,
                details,
            )
            held.setdefault(game, {})[uploader] = outcome.battles
            log.warning("held %d battles of %s in %s for review: %s", outcome.battles, uploader, game, reason)
        if game in held:  # the held battles no longer count: the table as it now stands
            verdicts, version = _verdicts(db, rid)
        with store.write(db):
            batch_tables.put(db, rid, batch_tables.UPLOADERS, [v.as_dict() for v in verdicts], version, store.utc_now())
    return held


def store_completions(db: store.Store, now: datetime) -> int:
    """For the feed: each rumble's new bots that met every active participant, and when
    (rumble.store.ladder_events.completions), stored with the log version they reflect
    (rumble.store.batch_tables), so that a request for a large rumble reads them. Rumbles stored."""
    since = store.format_time(now - timedelta(days=ladder_events.NEW_BOT_DAYS))
    with store.read(db):
        names = [row["name"] for row in rumble_rows(db) if row["battles"]]
    for game in names:
        rid = rumble_id(db, game)
        if rid is None:
            continue
        with store.read(db):
            version = log_version(db, rid)
            rows = ladder_events.completions(db, rid, ladder_events.complete_bots(db, rid, since))
        with store.write(db):
            batch_tables.put(db, rid, batch_tables.COMPLETIONS, rows, version, store.format_time(now))
    return len(names)


def _verdicts(db: store.Store, rid: int) -> tuple[list[Verdict], tuple]:
    """The rumble's uploader-consistency table and the log version it reflects (one read snapshot)."""
    with store.read(db):
        by_pairing = uploader_sums.consistency_totals(db, rid)
        version = log_version(db, rid)
    return consistency_of(by_pairing), version


def refresh_exports(db: store.Store, settings: dict[str, Any]) -> list[str]:
    """Rewrite the stale export snapshots that someone asked for before (rumble.schedule.exports), except the
    rankings (small: written on request); ``game/name`` of each one rewritten."""
    snapshots, rewritten = exports.Snapshots.from_settings(settings), []
    for game in snapshots.games():
        rid = rumble_id(db, game)
        if rid is None:
            continue
        with store.read(db):
            version = log_version(db, rid)
        for name in exports.REFRESHED_BY_JOB:
            writer = exports.table_writer(settings["DB"], rid, game, name)
            if snapshots.refresh(game, name, snapshots.etag(name, version), writer) is not None:
                rewritten.append(f"{game}/{name}")
    if rewritten:
        log.info("export snapshots rewritten: %s", ", ".join(rewritten))
    return rewritten


def take_daily_snapshot(db: store.Store) -> int:
    """Today's ranks of every rumble into rank_history, once a day (rumble.store.history); rows added."""
    from rumble.store.history import snapshot_day

    with store.write(db):
        added = snapshot_day(db)
    if added:
        log.info("daily rank snapshot: %d rows", added)
    return added


def try_lead(lock_path: str) -> IO | None:
    """The schedule's lead: the lock file held (``store.try_lock``), or None if another process leads.
    Keep the returned file open to keep the lead."""
    return store.try_lock(lock_path)


class BatchSchedule:
    """One process's part in the schedule: elections until it leads, then the batch rankings every interval."""

    def __init__(self, settings: dict[str, Any], election_seconds: float = ELECTION_SECONDS) -> None:
        from apscheduler.schedulers.background import BackgroundScheduler

        self.settings = settings
        self.minutes = float(settings["BATCH_INTERVAL_MINUTES"])
        self.election_seconds = election_seconds
        self.lock_path = str(settings["DB"]) + ".scheduler.lock"
        self.lead: IO | None = None
        self.scheduler = BackgroundScheduler(daemon=True, timezone=UTC)

    @property
    def leading(self) -> bool:
        return self.lead is not None

    def start(self) -> BatchSchedule:
        """Start the scheduler thread with an election now and every ``election_seconds``."""
        self.scheduler.add_job(
            self.elect, "interval", seconds=self.election_seconds, id="elect", next_run_time=datetime.now(UTC)
        )
        self.scheduler.start()
        return self

    def elect(self) -> bool:
        """Try to take the lead; on success stop electing and schedule the batch rankings, the first run now."""
        if self.lead is None:
            self.lead = try_lead(self.lock_path)
            if self.lead is None:
                return False
            if self.scheduler.get_job("elect"):
                self.scheduler.remove_job("elect")
            # a bound method: APScheduler's job keeps this object, and so the lock file, alive
            self.scheduler.add_job(
                self.run,
                "interval",
                minutes=self.minutes,
                id="batch",
                next_run_time=datetime.now(UTC),
                max_instances=1,
                coalesce=True,
            )
            self.scheduler.add_job(
                self.sweep_melee, "interval", seconds=MELEE_SWEEP_SECONDS, id="melee", max_instances=1, coalesce=True
            )
            log.info("process %d runs the batch rankings every %g minutes", os.getpid(), self.minutes)
        return True

    def run(self) -> list[Report]:
        """The batch rankings: ``scheduled_run`` with this schedule's settings."""
        return scheduled_run(self.settings)

    def sweep_melee(self) -> int:
        """The melee sweep: rate the melee battles whose pairs stopped coming (rumble.ingest.melee.sweep_all)."""
        db = store.connect(self.settings["DB"], self.settings["SYNCHRONOUS"], migrate=False)
        try:
            return melee.sweep_all(db, store.utc_now())
        except Exception:  # logged, and tried again next time
            log.exception("melee sweep failed")
            return 0
        finally:
            db.close()

    def shutdown(self, wait: bool = False) -> None:
        """Stop the scheduler and give up the lead; a run under way finishes in its thread (first, if ``wait``)."""
        if self.scheduler.running:
            self.scheduler.shutdown(wait=wait)
        if self.lead is not None:
            self.lead.close()
            self.lead = None


def start_scheduler(settings: dict[str, Any], election_seconds: float = ELECTION_SECONDS) -> BatchSchedule | None:
    """Join the batch-ranking schedule (see the module docstring); None if BATCH_INTERVAL_MINUTES is 0."""
    if float(settings["BATCH_INTERVAL_MINUTES"]) <= 0:
        return None
    return BatchSchedule(settings, election_seconds).start()
