"""Group commit: the write transactions a process's threads ask for while one is under way are
applied together, in ONE transaction, by one of them.

Every upload needs the database's write lock (``rumble.store.write``: a flock across processes,
then ``BEGIN IMMEDIATE``), and each pays for taking it, for catching up its worker's ratings copy
with what the other workers wrote meanwhile (rumble.ingest.fields) and for its COMMIT. Under load,
requests of one worker queue behind each other for that lock anyway; here the first of them
(the *leader*) takes the lock once for all that are waiting when it starts, applies their works
one after the other, commits, and only then wakes the others (the *followers*) with their
results. So nothing is answered before its COMMIT, as the protocol requires. A work that raises
is rolled back alone: the others are committed and it sees its exception, as it would have in a
transaction of its own. Works nearly never raise, so a group is first applied as it is; only if a
work raises is that transaction rolled back and the group applied again, each work in a SAVEPOINT
of its own, so that the failing one is rolled back to its savepoint alone. (A savepoint per work
every time cost the writer process about a thirtieth of its work per upload: SQLite keeps the
first copy of every page a savepoint changes.) Requests that arrive while a group is being applied
form the next group, led by one of them as soon as this one is committed.

A work must take everything it needs as arguments (no request context: it may run in another
thread) and use only the connection it is given. Should the transaction itself fail (its COMMIT,
or an error that aborts the whole transaction), every work of the group sees that error and
nothing of any of them is stored.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from rumble.store import Store, write

T = TypeVar("T")


@dataclass
class Work(Generic[T]):
    """One write transaction's work and, once its group is done, its result or its error."""

    apply: Callable[[Store], T]
    done: bool = False
    result: Any = None
    error: BaseException | None = None


class Group:
    """The works waiting for one database's next transaction in this process, and who leads it."""

    def __init__(self) -> None:
        self._changed = threading.Condition()
        self._waiting: list[Work] = []
        self._leading = False
        self.transactions = 0  # applied by this process, and the works in them: group sizes for benchmarks
        self.works = 0

    def run(self, db: Store, apply: Callable[[Store], T]) -> T:
        """``apply(connection)`` inside a committed write transaction; its result once committed."""
        work: Work[T] = Work(apply)
        with self._changed:
            self._waiting.append(work)
            while self._leading and not work.done:
                self._changed.wait()
            if not work.done:  # no group under way: this thread leads the next one
                self._leading = True
                group, self._waiting = self._waiting, []
        if not work.done:
            try:
                apply_group(db, group)
            finally:
                with self._changed:
                    self._leading = False
                    self.transactions += 1
                    self.works += len(group)
                    self._changed.notify_all()
        if work.error is not None:
            raise work.error
        return work.result


class _Retry(Exception):
    """A work raised while its group was applied without savepoints: apply the group again, in savepoints."""


def apply_group(db: Store, group: list[Work]) -> None:
    """Apply the works, all in one transaction, each rolled back alone if it raises; mark every one
    done. Raises the transaction's error if it failed as a whole (then every work has it as its error).

    A work must be safe to apply again once its transaction is rolled back (a function of the
    database and its arguments): the group is applied a second time if one of them raises."""
    try:
        try:
            with write(db):
                for work in group:
                    try:
                        work.result = work.apply(db)
                    except Exception as error:
                        raise _Retry from error  # rolls back the whole transaction (store.write)
        except _Retry:
            for work in group:
                work.result = None
            _apply_in_savepoints(db, group)
    except BaseException as error:
        for work in group:  # nothing was committed: no work may be answered as stored
            work.error = work.error or error
            work.result = None
        raise
    finally:
        for work in group:
            work.done = True


def _apply_in_savepoints(db: Store, group: list[Work]) -> None:
    """Apply each work in a savepoint of its own, all in one transaction: one that raises is
    rolled back to its savepoint and has its exception as its error; the others are committed."""
    with write(db):
        for work in group:
            db.conn.execute("SAVEPOINT work")
            try:
                work.result = work.apply(db)
            except Exception as error:
                work.error = error
                if not db.conn.in_transaction:  # SQLite aborted the whole transaction: nobody's work stays
                    raise
                db.conn.execute("ROLLBACK TO work")
                db._cache.clear()  # ids cached inside the rolled-back work may not exist,
                db.shared.clear()  # nor the ratings copies' changes it made in memory
            db.conn.execute("RELEASE work")


_groups: dict[tuple[int, str], Group] = {}
_groups_lock = threading.Lock()


def group_for(db: Store) -> Group | None:
    """This process's group for ``db``'s file (a fresh one after a fork); None for an in-memory
    database, whose connections are databases of their own."""
    if db.lock_path is None:
        return None
    key = (os.getpid(), os.path.realpath(db.lock_path))
    with _groups_lock:
        return _groups.setdefault(key, Group())


def run_in_group(db: Store, apply: Callable[[Store], T]) -> T:
    """``apply(connection)`` in a write transaction shared with the other threads' waiting works
    (``Group.run``); its result once committed, or the exception it raised (then nothing of it is stored)."""
    group = group_for(db)
    if group is None:
        with write(db):
            return apply(db)
    return group.run(db, apply)
