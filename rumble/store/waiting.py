"""This connection's copy of each rumble's waiting priority battles, for the hand-out every upload
asks for (rumble.store.confirmation_queue.hand_out): the waiting entries with their bots' names
and active flags, and the sole uploader of each pair looked at so far.

Reading them costs an upload more than anything else in the hand-out (the entries with four joins,
then a probe of the battle log per pair), yet between two uploads they rarely change: only when the
queue, a bot's active flag or a waiting pair's battles change. So the copy is kept while nothing it
depends on changed:

- another connection's commit changes SQLite's ``PRAGMA data_version`` for this one, and the copy
  is read again (``copy_for``, through ``rumble.store.connection_copy``);
- on this connection, every function that writes the queue, the participants' flags or the battle
  log's states drops the copies (``forget``), and storing a battle drops the sole uploader of its
  pair only (``battle_stored``). tests/test_architecture.py checks that those are the only
  functions writing these tables;
- a rolled-back transaction clears the connection's cache, copies included (rumble.store.write).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from rumble.store import Store, connection_copy, connection_copy_if_any, drop_connection_copy

_KEY = "waiting"  # this module's copies (rumble.store.connection_copy)


@dataclass
class WaitingCopy:
    """A rumble's waiting entries, oldest first: (id, a, b, a's name, b's name, both bots active);
    and for each pair (a, b) looked at, its one uploader, or None (several, or none)."""

    rows: list[tuple]
    soles: dict[tuple[int, int], str | None] = field(default_factory=dict)


def copy_for(db: Store, rumble_id: int, read: Callable[[Store, int], list[tuple]]) -> WaitingCopy:
    """This connection's copy of the rumble's waiting entries, read with ``read(db, rumble_id)`` if
    it has none or another connection committed since."""
    copies = connection_copy(db, _KEY)
    copy = copies.get(rumble_id)
    if copy is None:
        copy = copies[rumble_id] = WaitingCopy(read(db, rumble_id))
    return copy


def forget(db: Store) -> None:
    """Drop every copy: this connection changed the queue, a participant's flag or battles' states."""
    drop_connection_copy(db, _KEY)


def battle_stored(db: Store, rumble_id: int, a: int, b: int) -> None:
    """A battle of the pair (either order) was added to the log here: its sole uploader may have changed."""
    copy = (connection_copy_if_any(db, _KEY) or {}).get(rumble_id)
    if copy is not None:
        copy.soles.pop((min(a, b), max(a, b)), None)
