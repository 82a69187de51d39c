"""Flag, unflag and roll back battles: log rows change state, then the affected rumbles are rebuilt.

The battle log is never edited beyond a row's ``state``: 'ok' battles count, 'flagged' ones wait
for a maintainer (held out of every table until approved), 'removed' ones are rolled back for good
(until unflagged). After moving the rows, each rumble that had a battle move is recomputed with
``rebuild.rebuild_rumble``, inside the same write transaction, so the derived tables equal a
rebuild from the remaining log by construction, and the rebuild bumps the rumble's generation so
that every server worker reloads its in-memory copy and the batch schedule sees the change.

The three actions and the states they move from:

- ``flag``: ok → flagged (held for review: no longer counted)
- ``rollback``: ok or flagged → removed
- ``unflag``: flagged or removed → ok (approve a flagged battle, or undo a rollback)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime

from rumble.maintenance import rebuild
from rumble.parameters import ParameterError, shown, whole_number
from rumble.store import Store, battle_states, format_time
from rumble.store.battle_states import BattleFilter

TRANSITIONS: dict[str, tuple[tuple[str, ...], str]] = {
    "flag": (("ok",), "flagged"),
    "rollback": (("ok", "flagged"), "removed"),
    "unflag": (("flagged", "removed"), "ok"),
}


MAX_IDS = 10_000  # ids one request may list (SQLite binds each as a parameter)
MAX_ID = 2**63 - 1  # SQLite's largest integer


class FilterError(ValueError):
    """The criteria cannot be used: the message says which and why, in plain words."""


@dataclass
class Outcome:
    """What an action did (or, for a dry run, would do): battles moved and replayed, per rumble."""

    action: str
    moved: dict[str, int]
    replayed: dict[str, int] = field(default_factory=dict)
    dry_run: bool = False
    aside_seconds: dict[str, float] = field(default_factory=dict)  # each rumble's replay beside the writers
    locked_seconds: dict[str, float] = field(default_factory=dict)  # each rumble's swap under the write lock

    @property
    def battles(self) -> int:
        return sum(self.moved.values())

    def record(self, game: str, replayed: int, aside_seconds: float, locked_seconds: float) -> None:
        """A rumble recomputed aside and swapped in."""
        self.replayed[game] = replayed
        self.aside_seconds[game] = aside_seconds
        self.locked_seconds[game] = locked_seconds

    def timings(self) -> dict[str, dict[str, float]]:
        """How long each rumble's replay ran beside the writers and its swap held the write lock, in ms."""
        return {
            "aside_ms": {game: round(s * 1000, 1) for game, s in self.aside_seconds.items()},
            "locked_ms": {game: round(s * 1000, 1) for game, s in self.locked_seconds.items()},
        }


def parse_time(value: str | None, name: str) -> str | None:
    """A receive-time bound typed by a person ("2026-11-22", "2026-11-22 16:05", ISO with a zone) in
    the log's own form, UTC. Without a zone the time is taken as UTC."""
    if value is None or not value.strip():
        return None
    try:
        moment = datetime.fromisoformat(value.strip())
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=UTC)
        return format_time(moment)
    except (ValueError, OverflowError):  # OverflowError: a time near year 1 or 9999 whose zone moves it past
        raise FilterError(
            f"{name} must be a date or time like 2026-11-22 or 2026-11-22 16:05:00, not {shown(value)}"
        ) from None


def make_filter(
    game: str | None = None,
    uploader: str | None = None,
    remote_addr: str | None = None,
    client: str | None = None,
    since: str | None = None,
    until: str | None = None,
    ids: str | tuple[int, ...] | None = None,
    known_games=None,
) -> BattleFilter:
    """A checked ``BattleFilter`` from text fields (a form or the command line); empty means not given."""

    def text(value: str | None) -> str | None:
        return value.strip() if value is not None and value.strip() else None

    game = text(game)
    if game is not None and known_games is not None and game not in known_games:
        raise FilterError(f"no rumble called {game!r}")
    if isinstance(ids, str):
        parts = ids.replace(",", " ").split()
        if len(parts) > MAX_IDS:
            raise FilterError(f"at most {MAX_IDS} battle ids at once; choose more by time range, uploader or address")
        try:
            ids = tuple(whole_number(part, "battle id", 1, MAX_ID) for part in parts)
        except ParameterError as error:
            raise FilterError(f"battle ids must be whole numbers separated by commas or spaces: {error}") from None
    f = BattleFilter(
        game,
        text(uploader),
        text(remote_addr),
        text(client),
        parse_time(since, "since"),
        parse_time(until, "until"),
        tuple(ids or ()),
    )
    if f.since is not None and f.until is not None and f.since >= f.until:
        raise FilterError("since must come before until")
    if not f.selects_something_specific():
        raise FilterError("give at least one of uploader, remote address, client version, time range or battle ids")
    return f


def change_battles(db: Store, action: str, f: BattleFilter, min_battles: int, dry_run: bool = False) -> Outcome:
    """Apply ``action`` to the battles ``f`` selects and rebuild the rumbles it changed (caller holds
    the write transaction, and audits the outcome in it)."""
    if action not in TRANSITIONS:
        raise ValueError(f"no battle action {action!r}")
    sources, target = TRANSITIONS[action]
    if dry_run:
        return Outcome(action, battle_states.count_matching(db, f, sources), dry_run=True)
    moved = battle_states.set_state(db, f, sources, target)
    replayed = {}
    for game in moved:
        rounds = battle_states.rumble_rounds(db, game)
        replayed[game] = rebuild.rebuild_rumble(db, game, rounds, min_battles)
    return Outcome(action, moved, replayed)
