"""The accepted battles' sums per rumble, uploader, pairing and address (``uploader_sums``,
migrations/0022_uploader_sums.sql): what the uploader statistics read instead of the battle log.

Each row holds a pairing's battles by one uploader from one address, bot_a the one whose full
name sorts first: their count and the exact sums of bot_a's and bot_b's percentages and of the
square of bot_a's, as integers in units of 2^-77 (``SHARE_UNIT``) and 2^-102 (``SQUARE_UNIT``). The
sums are exact, so they depend only on which battles count: adding a battle and taking it out
again leaves the row as it was, and a rebuild (``refill``) gives the same integers as the upload
path. A trigger adds every battle logged in state 'ok'; the maintenance job that moves battles
into or out of 'ok' calls ``count`` or ``uncount`` with them in its transaction.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator

from rumble.rankings import uploader_trust
from rumble.rankings.uploader_consistency import Totals, from_sums
from rumble.store import Store

SHARE_UNIT = 2**77  # a percentage sum is an integer number of 2^-77
SQUARE_UNIT = 2**102  # a sum of squared percentages, of 2^-102
_KEY = ("rumble_id", "bot_a", "bot_b", "uploader", "address_id")
_SUMS = (
    "share_a2",
    "share_a1",
    "share_a0",
    "share_b2",
    "share_b1",
    "share_b0",
    "square_a3",
    "square_a2",
    "square_a1",
    "square_a0",
)
_COLUMNS = ", ".join((*_KEY, "battles", *_SUMS))
_ADD = ", ".join(f"{c} = {c} + excluded.{c}" for c in ("battles", *_SUMS))
_SUMMED = ", ".join(f"sum({c})" for c in ("battles", *_SUMS))
_TERMS = ", ".join(f"sum({c})" for c in _SUMS)
_NEGATED = ", ".join(f"-sum({c})" for c in _SUMS)


def _add_terms(db: Store, where: str, params: tuple, sign: int) -> None:
    """Add (``sign`` 1) or take away (-1) the terms of the battles ``where`` selects from the view
    uploader_battle_terms, then delete the rows left without a battle."""
    terms = _TERMS if sign > 0 else _NEGATED
    db.execute(
        f"INSERT INTO uploader_sums ({_COLUMNS}) SELECT {', '.join(_KEY)}, {sign} * count(*), {terms} "
        f"FROM uploader_battle_terms WHERE {where} GROUP BY {', '.join(_KEY)} "
        f"ON CONFLICT ({', '.join(_KEY)}) DO UPDATE SET {_ADD}",
        params,
    )
    db.execute("DELETE FROM uploader_sums WHERE battles = 0")  # through the partial index uploader_sums_emptied


def count(db: Store, ids: Iterable[int]) -> None:
    """Add the battles ``ids`` (that have just entered state 'ok'); caller holds the write transaction."""
    found = json.dumps(sorted(set(ids)))
    _add_terms(db, "id IN (SELECT value FROM json_each(?))", (found,), 1)


def uncount(db: Store, ids: Iterable[int]) -> None:
    """Take out the battles ``ids`` (that have just left state 'ok'); caller holds the write transaction."""
    _add_terms(db, "id IN (SELECT value FROM json_each(?))", (json.dumps(sorted(set(ids))),), -1)


def counted(db: Store, ids: Iterable[int]) -> set[int]:
    """Those of ``ids`` whose battles are in state 'ok'."""
    rows = db.execute(
        "SELECT id FROM battles WHERE id IN (SELECT value FROM json_each(?)) AND state = 'ok'",
        (json.dumps(sorted(set(ids))),),
    )
    return {battle_id for (battle_id,) in rows}


def refill(db: Store, rumble_id: int) -> None:
    """The rumble's rows computed afresh from its log (a rebuild; caller holds the write transaction)."""
    db.execute("DELETE FROM uploader_sums WHERE rumble_id = ?", (rumble_id,))
    db.execute(
        f"INSERT INTO uploader_sums ({_COLUMNS}) SELECT {', '.join(_KEY)}, count(*), {_TERMS} "
        f"FROM uploader_battle_terms WHERE rumble_id = ? AND state = 'ok' GROUP BY {', '.join(_KEY)}",
        (rumble_id,),
    )


def rows(db: Store, rumble_id: int | None = None) -> list[tuple]:
    """Every row (of one rumble, or all), in key order, with the address itself: what a rebuild must reproduce."""
    where, params = ("WHERE s.rumble_id = ?", (rumble_id,)) if rumble_id is not None else ("", ())
    return db.execute(
        f"SELECT s.rumble_id, s.uploader, s.bot_a, s.bot_b, d.remote_addr, s.battles, {', '.join(f's.{c}' for c in _SUMS)} "
        f"FROM uploader_sums s JOIN uploader_addresses d ON d.id = s.address_id {where} "
        "ORDER BY s.rumble_id, s.bot_a, s.bot_b, s.uploader, d.remote_addr",
        params,
    ).fetchall()


def _names(db: Store) -> dict[int, str]:
    """Every bot's full name by id (a few thousand rows: cheaper than a join per summed row)."""
    return dict(db.execute("SELECT id, full_name FROM bots").fetchall())


def pairing_sums(db: Store, rumble_id: int) -> Iterator[tuple[str, str, str, int, int, int, int]]:
    """Per uploader and pairing (every address together): (uploader, a, b, battles, Σ a's percentage,
    Σ b's percentage, Σ a's percentage squared), a < b by full name, the sums exact integers in
    ``SHARE_UNIT`` and ``SQUARE_UNIT``. One row per uploader and pairing, read in key order (no sort)."""
    names = _names(db)
    for u, a, b, n, a2, a1, a0, b2, b1, b0, q3, q2, q1, q0 in db.execute(
        f"SELECT uploader, bot_a, bot_b, {_SUMMED} FROM uploader_sums WHERE rumble_id = ? "
        "GROUP BY bot_a, bot_b, uploader",
        (rumble_id,),
    ):
        yield (
            u,
            names[a],
            names[b],
            n,
            (a2 << 64) + (a1 << 32) + a0,
            (b2 << 64) + (b1 << 32) + b0,
            (q3 << 96) + (q2 << 64) + (q1 << 32) + q0,
        )


def party_sums(db: Store, rumble_id: int) -> Iterator[tuple[str, str | None, str, str, int, int, int]]:
    """Per uploader, address and pairing: (uploader, address or None, a, b, battles, Σ a's percentage,
    Σ a's percentage squared), as ``pairing_sums``, pairing by pairing (the table's key order, no
    sort): what the uploaders' standings are computed from."""
    names = _names(db)
    addresses = dict(db.execute("SELECT id, remote_addr FROM uploader_addresses").fetchall())
    for u, address, a, b, n, a2, a1, a0, q3, q2, q1, q0 in db.execute(
        "SELECT uploader, address_id, bot_a, bot_b, battles, share_a2, share_a1, share_a0, "
        "square_a3, square_a2, square_a1, square_a0 FROM uploader_sums WHERE rumble_id = ? ORDER BY bot_a, bot_b",
        (rumble_id,),
    ):
        yield (
            u,
            addresses[address] or None,
            names[a],
            names[b],
            n,
            (a2 << 64) + (a1 << 32) + a0,
            (q3 << 96) + (q2 << 64) + (q1 << 32) + q0,
        )


def consistency_totals(db: Store, rumble_id: int) -> Totals:
    """The rumble's totals per pairing and uploader (rumble.rankings.uploader_consistency.from_sums),
    every address of an uploader together; the caller holds a read snapshot. Read row by row,
    without the sums of b's percentages that ``pairing_sums`` adds: the rumble's largest read for a page."""
    names = _names(db)
    return from_sums(
        (
            (u, names[a], names[b], n, (a2 << 64) + (a1 << 32) + a0, (q3 << 96) + (q2 << 64) + (q1 << 32) + q0)
            for u, a, b, n, a2, a1, a0, q3, q2, q1, q0 in db.execute(
                "SELECT uploader, bot_a, bot_b, sum(battles), sum(share_a2), sum(share_a1), sum(share_a0), "
                "sum(square_a3), sum(square_a2), sum(square_a1), sum(square_a0) FROM uploader_sums "
                "WHERE rumble_id = ? GROUP BY bot_a, bot_b, uploader",
                (rumble_id,),
            )
        ),
        SHARE_UNIT,
        SQUARE_UNIT,
    )


def party_totals(db: Store, rumble_id: int) -> Totals:
    """The rumble's totals per pairing and party (rumble.rankings.uploader_trust.party: the uploader
    with its address's network), the addresses of one network added together exactly; the caller
    holds a read snapshot. Each pairing's parties are summed as its rows come (``party_sums``), so
    that only the totals are held, not the exact sums of every pairing besides."""
    parties: dict[tuple[str, str | None], str] = {}

    def by_party() -> Iterator[tuple[str, str, str, int, int, int]]:
        pair = ("", "")  # the pairing being read
        found: dict[str, list[int]] = {}  # its exact sums per party
        for uploader, address, a, b, n, share, square in party_sums(db, rumble_id):
            if (a, b) != pair:  # the rows come pairing by pairing
                yield from _party_rows(pair, found)
                pair, found = (a, b), {}
            key = (uploader, address)
            if key not in parties:
                parties[key] = uploader_trust.party(uploader, uploader_trust.network(address))
            t = found.setdefault(parties[key], [0, 0, 0])
            t[0], t[1], t[2] = t[0] + n, t[1] + share, t[2] + square
        yield from _party_rows(pair, found)

    return from_sums(by_party(), SHARE_UNIT, SQUARE_UNIT)


def _party_rows(pair: tuple[str, str], found: dict[str, list[int]]) -> Iterator[tuple[str, str, str, int, int, int]]:
    """One pairing's rows for ``from_sums``: (party, a, b, battles, Σ share, Σ share²)."""
    for party, (n, share, square) in found.items():
        yield party, pair[0], pair[1], n, share, square


def at_most(db: Store, rumble_id: int, limit: int) -> bool:
    """Whether the rumble has at most ``limit`` rows of sums (reads at most ``limit`` + 1 index entries)."""
    (count,) = db.execute(
        "SELECT count(*) FROM (SELECT 1 FROM uploader_sums WHERE rumble_id = ? LIMIT ?)", (rumble_id, limit + 1)
    ).fetchone()
    return count <= limit
