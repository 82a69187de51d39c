"""The uploader statistics' sums (rumble/store/uploader_sums.py, migrations/0022_uploader_sums.sql)
kept as battles arrive, are held, rolled back and released: equal to exact sums computed here from
the log's rows, to a rebuild and to the migration's fill; and the consistency table, the standings
and the rollback preview computed from them equal the same computed from the battles themselves."""

from __future__ import annotations

import random
from fractions import Fraction

import pytest
from admin_jobs import post_and_wait
from conftest import battle, maintainer_token, post_upload, vouch_for_local_uploads

from rumble import store
from rumble.ingest import apply
from rumble.maintenance.rebuild import rebuild_rumble
from rumble.protocol.games import load_rumbles
from rumble.protocol.replies import Kind
from rumble.rankings import rollback_preview, uploader_trust
from rumble.rankings.uploader_consistency import Share, consistency, consistency_of
from rumble.store import battle_log, bots, uploader_sums
from rumble.store.migrations import migrate
from rumble.store.rumbles import rumble_id
from tests.store.older_schema import older_copy

BOTS = [f"p{i % 2}.Bot{i} 1.{i}" for i in range(6)]
STRENGTH = {name: 6.0 * i for i, name in enumerate(BOTS)}
# (uploader, address): U1 from two addresses of one /24 (one party), U3 over IPv6, U4 small
SENDERS = [
    ("U1", "10.0.0.1"),
    ("U1", "10.0.0.2"),
    ("U2", "10.1.0.7"),
    ("U3", "2001:db8:5::1"),
    ("U4", "192.0.2.9"),
]


def _scores(a: str, b: str, rng: random.Random, bias: float) -> tuple[int, int]:
    """Scores for a battle of a and b; now and then the edge cases: nobody scored, one side nearly nothing."""
    roll = rng.random()
    if roll < 0.03:
        return 0, 0
    if roll < 0.06:
        return 1, rng.randint(5000, 9999)
    share = min(97.0, max(3.0, 50.0 + STRENGTH[a] - STRENGTH[b] + rng.gauss(0, 5) + bias))
    total = rng.randint(3000, 9000)
    return round(total * share / 100), total - round(total * share / 100)


@pytest.fixture(autouse=True)
def established_senders(app):
    """U1, U2 and U3 are the operator's clients: none of their battles is held as a stranger's."""
    for uploader, address in SENDERS[:4]:
        vouch_for_local_uploads(app.config["RUMBLE"]["DB"], uploader_trust.party(uploader, address))


def _session(client, clock, rng: random.Random) -> None:
    """Every pairing played again and again, by several uploaders; U3 favours Bot0 by 15 points."""
    pairs = [(a, b) for i, a in enumerate(BOTS) for b in BOTS[i + 1 :]]
    now = clock.now_ms()
    held = 0
    for k in range(330):
        uploader, address = SENDERS[4] if k % 30 == 0 else rng.choice(SENDERS[:4])
        a, b = rng.choice(pairs)
        if rng.random() < 0.5:
            a, b = b, a  # either bot may come first in the upload
        bias = 15.0 if uploader == "U3" and BOTS[0] in (a, b) else 0.0
        scores = _scores(a, b, rng, bias if a == BOTS[0] else -bias)
        result = battle(a, b, scores=scores, uploader=uploader, time_ms=now - 1000 * k)
        outcome, _ = post_upload(client, result, environ_base={"REMOTE_ADDR": address})
        assert outcome.kind in (Kind.ACCEPTED, Kind.HELD), outcome  # an implausible one is logged held
        held += outcome.kind is Kind.HELD
    assert held < 10
    # a rumble scored by rounds won: the percentages come from the firsts over the battle's rounds
    for k in range(12):
        uploader, address = SENDERS[k % 3]
        firsts = rng.randint(0, 75)
        result = battle(
            "t.TeamA 1",
            "t.TeamB 1",
            scores=(rng.randint(0, 9000), rng.randint(0, 9000)),
            firsts=(firsts, 75 - firsts),
            game="twinduel",
            teams=True,
            rounds=75,
            field="800x800",
            uploader=uploader,
            time_ms=now - 500 * k,
        )
        assert post_upload(client, result, environ_base={"REMOTE_ADDR": address})[0].kind == Kind.ACCEPTED


def _retire_hold_roll_back_and_release(app, client, clock) -> None:
    """A retirement, a hold of one address's battles and the release of half of them, and a rollback."""
    db = store.connect(app.config["RUMBLE"]["DB"])
    rid = rumble_id(db, "roborumble")
    with store.write(db):
        assert apply.retire(db, rid, bots.find_bot(db, BOTS[5]), store.format_time(clock.now()), "test")
    held = [
        i
        for (i,) in db.execute(
            "SELECT b.id FROM battles b JOIN uploader_addresses d ON d.id = b.address_id WHERE d.remote_addr = '10.0.0.2' ORDER BY b.id"
        )
    ]
    db.close()
    headers = {"Authorization": f"Bearer {maintainer_token(app)}"}
    assert post_and_wait(client, "/admin/flag", headers, json={"remote_addr": "10.0.0.2"})[1]["state"] == "done"
    released = ",".join(str(i) for i in held[::2])
    assert post_and_wait(client, "/admin/unflag", headers, json={"ids": released})[1]["state"] == "done"
    assert post_and_wait(client, "/admin/rollback", headers, json={"uploader": "U4"})[1]["state"] == "done"


def _logged(db, game: str) -> list[tuple[str, str | None, str, str, float, float]]:
    """Every accepted battle of ``game`` from the log's rows: (uploader, address, a, b, a's %, b's %),
    a before b by name, each percentage as the rumble scores it (score share, or rounds won)."""
    rows = db.execute(
        "SELECT (SELECT name FROM uploaders WHERE id = x.uploader_id), d.remote_addr, fa.full_name, fb.full_name, x.first_score, x.second_score, "
        "x.first_firsts, x.second_firsts, x.rounds, r.scoring FROM battles x JOIN rumbles r ON r.id = x.rumble_id "
        "JOIN bots fa ON fa.id = x.first_bot_id JOIN bots fb ON fb.id = x.second_bot_id "
        "LEFT JOIN uploader_addresses d ON d.id = x.address_id WHERE r.name = ? AND x.state = 'ok'",
        (game,),
    ).fetchall()
    found = []
    for uploader, address, first, second, s1, s2, f1, f2, rounds, scoring in rows:
        if scoring == "survival":
            p1, p2 = 100.0 * f1 / rounds, 100.0 * f2 / rounds
        else:
            p1, p2 = (50.0, 50.0) if s1 + s2 == 0 else (100.0 * s1 / (s1 + s2), 100.0 * s2 / (s1 + s2))
        found.append(
            (uploader, address, first, second, p1, p2) if first < second else (uploader, address, second, first, p2, p1)
        )
    return found


def _joined(limbs) -> int:
    value = 0
    for limb in limbs:
        value = value * 2**32 + limb
    return value


def test_the_sums_equal_exact_sums_of_the_logs_percentages_and_a_rebuild(app, client, clock):
    _session(client, clock, random.Random(11))
    _retire_hold_roll_back_and_release(app, client, clock)
    db = store.connect(app.config["RUMBLE"]["DB"])
    names = dict(db.execute("SELECT id, full_name FROM bots").fetchall())
    games = dict(db.execute("SELECT id, name FROM rumbles").fetchall())
    online = uploader_sums.rows(db)
    kept = {}
    for rid, uploader, a, b, address, battles, *limbs in online:
        kept[(games[rid], uploader, address or None, names[a], names[b])] = (
            battles,
            Fraction(_joined(limbs[0:3]), 2**77),
            Fraction(_joined(limbs[3:6]), 2**77),
            Fraction(_joined(limbs[6:10]), 2**102),
        )
    expected: dict[tuple, list] = {}
    for game in ("roborumble", "twinduel"):
        for uploader, address, a, b, pa, pb in _logged(db, game):
            t = expected.setdefault((game, uploader, address, a, b), [0, Fraction(0), Fraction(0), Fraction(0)])
            t[0] += 1
            t[1] += Fraction(pa)
            t[2] += Fraction(pb)
            t[3] += Fraction(pa * pa)
    assert kept == {key: tuple(t) for key, t in expected.items()}
    assert {u for _, u, *_ in expected} == {"U1", "U2", "U3"}  # U4 rolled back: no row left
    assert any(key[0] == "twinduel" for key in expected)
    rumbles = load_rumbles()
    with store.write(db):
        for game in ("roborumble", "twinduel"):
            rebuild_rumble(db, game, rumbles[game].rounds, min_battles=3)
    assert uploader_sums.rows(db) == online
    db.close()


def test_tables_from_the_sums_equal_the_same_computed_from_the_battles(app, client, clock):
    _session(client, clock, random.Random(12))
    _retire_hold_roll_back_and_release(app, client, clock)
    db = store.connect(app.config["RUMBLE"]["DB"])
    rid = rumble_id(db, "roborumble")
    logged = _logged(db, "roborumble")
    # the consistency table: from the sums, through the API too, and from the battles
    from_battles = [v.as_dict() for v in consistency([Share(u, a, b, pa) for u, _, a, b, pa, _ in logged])]
    assert [v.as_dict() for v in consistency_of(uploader_sums.consistency_totals(db, rid))] == from_battles
    assert client.get("/api/v1/rumbles/roborumble/uploaders?limit=100").json["items"] == from_battles
    assert any(row["tested"] for row in from_battles)
    assert next(row for row in from_battles if row["uploader"] == "U3")["flagged"]
    # the standings: each battle under its party, the uploader with its address's network
    shares = [
        Share(uploader_trust.party(u, uploader_trust.network(address)), a, b, pa) for u, address, a, b, pa, _ in logged
    ]
    vouched = {uploader_trust.party("U2", "10.1.0.7")}
    by_party = uploader_sums.party_totals(db, rid)
    assert uploader_trust.standings_of(by_party, vouched) == uploader_trust.standings(shares, vouched)
    assert {uploader_trust.party("U1", "10.0.0.1"), uploader_trust.party("U3", "2001:db8:5::1")} <= set(
        by_party.uploaders
    )
    established = {uploader_trust.party("U1", "10.0.0.1")}
    assert uploader_trust.confirmed_of(by_party, established) == uploader_trust.confirmed(shares, established)
    # the rollback preview
    active = set(bots.participant_names(db, rid))
    assert BOTS[5] not in active
    battles = [(u, a, b, pa, pb) for u, _, a, b, pa, pb in logged]
    sums = [(u, a, b, n, sa, sb) for u, a, b, n, sa, sb, _ in uploader_sums.pairing_sums(db, rid)]
    for uploader in ("U1", "U2", "U3"):
        from_sums = rollback_preview.preview_of(sums, uploader_sums.SHARE_UNIT, active, uploader)
        assert from_sums == rollback_preview.preview(battles, active, uploader)
        assert from_sums["battles"] == sum(1 for u, *_ in battles if u == uploader)
    db.close()


def test_the_migration_fills_the_sums_of_a_database_that_had_none(app, client, clock, tmp_path):
    _session(client, clock, random.Random(13))
    _retire_hold_roll_back_and_release(app, client, clock)
    db = store.connect(app.config["RUMBLE"]["DB"])
    online = uploader_sums.rows(db)
    old = older_copy(db, tmp_path / "old.db", "0022_uploader_sums")  # the database as it was before migration 0022
    db.close()
    assert "uploader_sums" not in old.table_names()
    assert "0022_uploader_sums" in migrate(old)
    assert uploader_sums.rows(old) == online
    old.close()


def test_the_log_keeps_its_addresses_and_sums_when_it_takes_them_as_numbers(app, client, clock, tmp_path):
    """Migration 0028: a log that kept each battle's address as text keeps the same addresses as
    numbers, and the same uploader sums; uploads and the address lookups go on from there."""
    _session(client, clock, random.Random(17))
    _retire_hold_roll_back_and_release(app, client, clock)
    db = store.connect(app.config["RUMBLE"]["DB"])
    with store.write(db):  # a battle without an address, as `rumble import` logs one
        logged = apply.with_receipt(battle(BOTS[0], BOTS[1], uploader="U1"), None, clock.now())
        assert apply.apply_battle(db, logged, 35, 3).stored
    before = list(battle_log.log_rows(db))
    online = uploader_sums.rows(db)
    old = older_copy(db, tmp_path / "old.db", "0028_battle_addresses_as_numbers")
    db.close()
    texts = [row[0] for row in old.execute("SELECT remote_addr FROM battles ORDER BY id")]
    assert texts == [row["remote_addr"] for row in before] and None in texts and "10.0.0.2" in texts
    assert uploader_sums.rows(old) == online  # (migration 0022's trigger summed the copied battles)
    assert migrate(old)[0] == "0028_battle_addresses_as_numbers"  # (and the migrations after it)
    assert list(battle_log.log_rows(old)) == before
    assert uploader_sums.rows(old) == online
    rid = rumble_id(old, "roborumble")
    newest = {
        row["remote_addr"]: row["uploader"] for row in before if row["state"] == "ok" and row["game"] == "roborumble"
    }
    assert newest.pop(None) == "U1" and len(newest) == 4  # (U4, from 192.0.2.9, was rolled back)
    for address, uploader in newest.items():  # (a battle without an address is no address's)
        assert battle_log.latest_uploader(old, address, rid, "0000-00-00") == uploader
    old.close()


@pytest.mark.parametrize(
    "scores",
    [(0, 0), (1, 9999), (9999, 1), (3, 7), (6598, 4883), (1, 1), (0, 5000), (9973, 9967)],
)
def test_a_battles_terms_are_its_percentages_exactly(app, upload, clock, scores):
    """floor(x * 2^77) and floor(x * x * 2^102) computed in SQL from limbs equal the exact values
    of Python's percentages (every one of these is a multiple of those units)."""
    assert upload(battle("a.A 1", "b.B 1", scores=scores, uploader="U")).kind == Kind.ACCEPTED
    db = store.connect(app.config["RUMBLE"]["DB"])
    ((*_, battles, a2, a1, a0, b2, b1, b0, q3, q2, q1, q0),) = uploader_sums.rows(db)
    s1, s2 = scores
    pa, pb = (50.0, 50.0) if s1 + s2 == 0 else (100.0 * s1 / (s1 + s2), 100.0 * s2 / (s1 + s2))
    assert battles == 1
    assert Fraction(_joined((a2, a1, a0)), 2**77) == Fraction(pa)
    assert Fraction(_joined((b2, b1, b0)), 2**77) == Fraction(pb)
    assert Fraction(_joined((q3, q2, q1, q0)), 2**102) == Fraction(pa * pa)
    db.close()
