"""Maintenance as jobs: rebuild a rumble, or flag, roll back or unflag battles, without blocking uploads.

Each action goes through ``rumble.maintenance.swap.recompute`` once per rumble it touches: the rumble is
recomputed aside and swapped in under a short write lock, together with the battles' state change
and the audit entry (one per rumble, so each swap is audited in its own transaction). /admin
records a job (table ``jobs``) and starts ``rumble run-job ID`` as a process of its own, in a new
session: it outlives the request, gunicorn's timeout and a worker's restart, and it does not
compete with the worker's uploads for one interpreter. The command line runs the same functions
in its own process, with a progress bar.

A flag, rollback or unflag moves the battles that matched when it was asked for (``max_id``: the
newest log id then); battles that arrive while it runs are not moved, as if it had run at once.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
import traceback
from collections.abc import Callable

from rumble import store
from rumble.maintenance import integrity, swap
from rumble.store import Store, battle_log, battle_states, job_queue, maintainers, utc_now

KINDS = ("rebuild", "flag", "rollback", "unflag")
PROGRESS_EVERY_S = 1.0  # how often a running job writes its progress row

Progress = Callable[[str, int, int], None]  # (game, battles replayed so far, battles in the log)


def rebuild(
    db: Store, games: list[str], min_battles: int, who: str, details: dict, progress: Progress | None = None
) -> integrity.Outcome:
    """Recompute each of ``games`` from its log; audited per rumble as ``rebuild``."""
    outcome = integrity.Outcome("rebuild", {})
    for game in games:

        def audit(conn: Store, job: swap.Job, game=game) -> None:
            maintainers.audit(conn, who, "rebuild", {**details, "game": game}, 0, utc_now())

        job = _recompute(db, game, min_battles, progress, in_swap=audit)
        outcome.record(game, job.replay.replayed, job.aside_seconds, job.locked_seconds)
    return outcome


def change_battles(
    db: Store,
    action: str,
    f: battle_states.BattleFilter,
    max_id: int,
    min_battles: int,
    who: str,
    details: dict,
    progress: Progress | None = None,
) -> integrity.Outcome:
    """Apply ``action`` to the battles ``f`` selects among log ids up to ``max_id`` and recompute
    each rumble they belong to; audited per rumble, with the battles moved there."""
    sources, target = integrity.TRANSITIONS[action]
    moved: dict[str, int] = {}
    outcome = integrity.Outcome(action, moved)
    with store.read(db):
        chosen = battle_states.matching_ids(db, f, sources, max_id)
    for game, ids in chosen.items():

        def swap_in(conn: Store, job: swap.Job, game=game, ids=ids) -> None:
            moved[game] = battle_states.set_state_of(conn, ids, sources, target)
            entry = {**details, "criteria": f.describe(), "per_rumble": {game: moved[game]}}
            maintainers.audit(conn, who, action, entry, moved[game], utc_now())

        job = _recompute(db, game, min_battles, progress, frozenset(ids), target, swap_in)
        outcome.record(game, job.replay.replayed, job.aside_seconds, job.locked_seconds)
    if not chosen:
        with store.write(db):
            maintainers.audit(db, who, action, {**details, "criteria": f.describe(), "per_rumble": {}}, 0, utc_now())
    return outcome


def _recompute(
    db: Store,
    game: str,
    min_battles: int,
    progress: Progress | None,
    moved: frozenset[int] = frozenset(),
    moved_to: str = "ok",
    in_swap=None,
) -> swap.Job:
    with store.read(db):
        rounds = battle_states.rumble_rounds(db, game)
        total = battle_states.logged_battles(db, game)
    done = 0

    def step(n: int) -> None:
        nonlocal done
        done += n
        if progress is not None:
            progress(game, done, total)

    with swap.one_at_a_time(db):
        return swap.recompute(db, game, rounds, min_battles, step, moved, moved_to, in_swap)


def newest_battle(db: Store) -> int:
    """The log's newest battle id: what an action asked for now applies to."""
    return battle_log.newest_id(db)


def criteria(f: battle_states.BattleFilter) -> dict:
    """A filter as the job's arguments keep it (``_dispatch`` makes it again)."""
    return {**vars(f), "ids": list(f.ids)}


# -- jobs: recorded by /admin, run by `rumble run-job ID` ------------------------------------------


def submit(db: Store, kind: str, args: dict, who: str) -> int:
    """Record a job (its own write transaction); its id."""
    if kind not in KINDS:
        raise ValueError(f"no maintenance job {kind!r}")
    with store.write(db):
        return job_queue.add_job(db, kind, args, who, utc_now())


_children: list[subprocess.Popen] = []  # this process's jobs, reaped so that an ended one leaves no zombie


def spawn(db_path: str, job_id: int) -> subprocess.Popen:
    """Start ``rumble run-job`` for the job, detached from the caller's session and its output."""
    _children[:] = [child for child in _children if child.poll() is None]
    child = subprocess.Popen(
        [sys.executable, "-m", "rumble", "run-job", "--db", db_path, str(job_id)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    _children.append(child)
    return child


def run(db_path: str, job_id: int, synchronous: str = "NORMAL") -> dict:
    """Run a recorded job to its end; the job's row afterwards. Its progress goes to the row as it runs."""
    db = store.connect(db_path, synchronous)
    side = store.connect(db_path, synchronous, migrate=False)  # progress rows, written while ``db`` is in a snapshot
    try:
        with store.write(db):
            found = job_queue.job(db, job_id)
            if found is None or not job_queue.start_job(db, job_id, os.getpid(), utc_now()):
                raise LookupError(f"no queued job {job_id}")
        last = 0.0

        def progress(game: str, done: int, total: int) -> None:
            nonlocal last
            if time.monotonic() - last >= PROGRESS_EVERY_S:
                last = time.monotonic()
                with store.write(side):
                    job_queue.set_progress(side, job_id, f"{game}: {done} of {total} battles replayed")

        try:
            result = _dispatch(db, found, progress)
        except Exception as error:  # recorded for /admin: the swap is atomic, so nothing was half-applied
            with store.write(side):
                job_queue.finish_job(side, job_id, utc_now(), error=f"{type(error).__name__}: {error}")
            traceback.print_exc()
        else:
            with store.write(side):
                job_queue.set_progress(side, job_id, "done")
                job_queue.finish_job(side, job_id, utc_now(), result=result)
        finished = job_queue.job(side, job_id)
        assert finished is not None  # the row this function claimed
        return finished
    finally:
        side.close()
        db.close()


def _dispatch(db: Store, found: dict, progress: Progress) -> dict:
    args, who = found["args"], found["requested_by"]
    details = {**args.get("details", {}), "job": found["id"]}
    if found["kind"] == "rebuild":
        outcome = rebuild(db, args["games"], args["min_battles"], who, details, progress)
        return {"replayed": outcome.replayed, "battles": sum(outcome.replayed.values()), **outcome.timings()}
    f = battle_states.BattleFilter(**{**args["criteria"], "ids": tuple(args["criteria"].get("ids", ()))})
    outcome = change_battles(db, found["kind"], f, args["max_id"], args["min_battles"], who, details, progress)
    return {"battles": outcome.battles, "per_rumble": outcome.moved, "replayed": outcome.replayed, **outcome.timings()}


def job_state(db: Store, job_id: int) -> dict | None:
    """The job's row; a job whose process is gone without finishing is reported failed."""
    found = job_queue.job(db, job_id)
    return _checked(found) if found is not None else None


def recent(db: Store, limit: int = 20) -> list[dict]:
    """The newest jobs, as ``job_state`` reports them."""
    return [_checked(found) for found in job_queue.recent_jobs(db, limit)]


def _checked(found: dict) -> dict:
    _children[:] = [child for child in _children if child.poll() is None]
    if found["state"] == "running" and found["pid"] and not _alive(found["pid"]):
        return {**found, "state": "failed", "error": "its process ended before it finished (nothing was half-applied)"}
    return found


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
