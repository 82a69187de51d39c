"""Group commit's transaction (rumble/store/group_commit.py ``apply_group``) on a real database
file: works that all succeed are applied without savepoints, in one transaction; when one raises,
that transaction is rolled back and the group applied again, each work in a savepoint, so the
failing work alone is rolled back and the others are committed."""

from __future__ import annotations

from functools import partial

from rumble import store
from rumble.store import group_commit
from rumble.store.group_commit import Work
from tests.store.test_single_writer import _fail_after_writing, _put, _settings


def _statements(db: store.Store) -> list[str]:
    """The statements ``db`` runs from now on (SQLite's trace callback)."""
    seen: list[str] = []
    db.conn.set_trace_callback(seen.append)
    return seen


def test_a_group_whose_works_all_succeed_is_one_transaction_without_savepoints(tmp_path):
    path = tmp_path / "rumble.db"
    db = store.connect(path)
    try:
        seen = _statements(db)
        group = [Work(partial(_put, name, k)) for k, name in enumerate(("a", "b", "c"))]
        group_commit.apply_group(db, group)
    finally:
        db.close()
    assert [(work.done, work.error) for work in group] == [(True, None)] * 3
    assert [s for s in seen if s.split()[0] in ("BEGIN", "SAVEPOINT", "ROLLBACK", "RELEASE", "COMMIT")] == [
        "BEGIN IMMEDIATE",
        "COMMIT",
    ]
    assert _settings(path) == {"a": 0, "b": 1, "c": 2}


def test_a_failing_work_is_rolled_back_alone_and_the_others_are_committed(tmp_path):
    path = tmp_path / "rumble.db"
    db = store.connect(path)
    try:
        seen = _statements(db)
        group = [Work(partial(_put, "a", 1)), Work(partial(_fail_after_writing, "b")), Work(partial(_put, "c", 3))]
        group_commit.apply_group(db, group)
    finally:
        db.close()
    assert [work.done for work in group] == [True] * 3
    assert (group[0].error, group[2].error, str(group[1].error)) == (None, None, "no b for you")
    assert (group[1].result, isinstance(group[0].result, int), isinstance(group[2].result, int)) == (None, True, True)
    assert _settings(path) == {"a": 1, "c": 3}  # nothing of b, not even what it wrote before raising
    transactions = [s.split()[0] for s in seen if s.split()[0] in ("BEGIN", "SAVEPOINT", "ROLLBACK", "COMMIT")]
    assert transactions == ["BEGIN", "ROLLBACK", "BEGIN", "SAVEPOINT", "SAVEPOINT", "ROLLBACK", "SAVEPOINT", "COMMIT"]
