"""A database as an older release left it: migrated up to a given migration, holding a copy of
another database's rumbles, bots and battles (the columns both have)."""

from __future__ import annotations

from pathlib import Path

from rumble import store
from rumble.store import Store
from rumble.store.migrations import migrate


def older_copy(source: Store, path: Path, stop_before: str) -> Store:
    """A new database at ``path`` migrated up to (not including) ``stop_before``, with ``source``'s
    rumbles, bots, addresses, setups, uploaders and battles; a battle's address as its text while the log kept it so (before
    migration 0028), its protocol version, client version and battlefield (before 0029), its
    receive time (before 0031) and its uploader's name (before 0032)."""
    old = store.connect(path, migrate=False)
    migrate(old, stop_before=stop_before)
    for table in ("rumbles", "bots", "uploader_addresses", "battle_setups", "uploaders", "battles"):
        have = [row[1] for row in old.execute(f"PRAGMA table_info({table})")]
        if not have:  # a table of a later migration
            continue
        columns = [row[1] for row in source.execute(f"PRAGMA table_info({table})") if row[1] in have]
        chosen = [f"t.{column}" for column in columns]
        joined = ""
        if table == "battles" and "remote_addr" in have:
            columns.append("remote_addr")
            chosen.append("d.remote_addr")
            joined = " LEFT JOIN uploader_addresses d ON d.id = t.address_id"
        if table == "battles" and "client" in have:
            columns += ["version", "client", "field"]
            chosen += ["u.version", "u.client", "u.field"]
            joined += " JOIN battle_setups u ON u.id = t.setup_id"
        if table == "battles" and "uploader_id" not in have:
            columns.append("uploader")
            chosen.append("n.name")
            joined += " JOIN uploaders n ON n.id = t.uploader_id"
        if table == "battles" and "received_ms" not in have:  # (table_info leaves out the virtual received_at)
            columns.append("received_at")
            chosen.append("t.received_at")
        rows = source.execute(f"SELECT {', '.join(chosen)} FROM {table} t{joined}").fetchall()
        # (the migrations made the rumbles; a battle goes in plainly: an OR REPLACE would override
        # the conflict clauses of the log's triggers too)
        verb = "INSERT" if table == "battles" else "INSERT OR REPLACE"
        old.conn.executemany(
            f"{verb} INTO {table} ({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))})", rows
        )
    return old
