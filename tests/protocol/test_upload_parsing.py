"""Parsing upload bodies exactly as the real client sends them (protocol.md section 7.1)."""

from __future__ import annotations

import pytest

from rumble.protocol import ProtocolError
from rumble.protocol.battle import Side
from rumble.protocol.games import load_rumbles
from rumble.protocol.upload import FIELDS, Policy, check_upload, format_upload, parse_upload

# Captured from the real client (protocol.md 7.1), byte for byte.
CAPTURED = (
    b"game=roborumble&version=1&client=1.9.3.9&teams=NOT&melee=NOT&rounds=35&field=800x600&user=Jane Doe"
    b"&time=1795354546578&fname=sample.Corners 1.0&fscore=6598&fbulletd=3939&fsurvival=32"
    b"&sname=sample.RamFire 1.0&sscore=4883&sbulletd=3230&ssurvival=3\n"
)
NOW = 1795354546578 + 60_000
POLICY = Policy(accepted_clients=("1.9.3.9",), max_age_ms=24 * 3_600_000, max_skew_ms=3_600_000)


def test_captured_body_parses_to_its_fields():
    b = parse_upload(CAPTURED)
    assert (b.game, b.version, b.client, b.teams, b.melee, b.rounds, b.field) == (
        "roborumble",
        "1",
        "1.9.3.9",
        False,
        False,
        35,
        "800x600",
    )
    assert (b.uploader, b.time_ms) == ("Jane Doe", 1795354546578)
    assert b.first == Side("sample.Corners 1.0", 6598, 3939, 32)
    assert b.second == Side("sample.RamFire 1.0", 4883, 3230, 3)


def test_windows_line_ending_is_stripped():
    assert parse_upload(CAPTURED[:-1] + b"\r\n") == parse_upload(CAPTURED)


def test_body_is_not_url_decoded():
    """A form decoder would turn '+' into a space and decode %41; the client sends them raw."""
    b = parse_upload(CAPTURED.replace(b"user=Jane Doe", b"user=Jane+Doe%41"))
    assert b.uploader == "Jane+Doe%41"


def test_user_in_utf8_and_in_latin1():
    """The client writes with the JVM's default charset: UTF-8 under a UTF-8 locale, else e.g. Latin-1."""
    assert parse_upload(CAPTURED.replace(b"Jane Doe", "Zoë Ł".encode())).uploader == "Zoë Ł"
    assert parse_upload(CAPTURED.replace(b"Jane Doe", "Zoë".encode("latin-1"))).uploader == "Zoë"


def test_format_upload_is_the_inverse_of_parse():
    assert format_upload(parse_upload(CAPTURED)) == CAPTURED


def test_melee_and_team_captures_parse():
    melee = (
        b"game=meleerumble&version=1&client=1.9.3.9&teams=NOT&melee=YES&rounds=35&field=1000x1000&user=Jane Doe"
        b"&time=1795354572459&fname=sample.Walls 0.9b&fscore=25214&fbulletd=7189&fsurvival=29"
        b"&sname=sample.SpinBot 1.2.3&sscore=18237&sbulletd=6378&ssurvival=3\n"
    )
    team = (
        b"game=twinduel&version=1&client=1.9.3.9&teams=YES&melee=NOT&rounds=75&field=800x800&user=Jane Doe"
        b"&time=1795354631029&fname=sample.SpinAndTrack 1.0&fscore=33872&fbulletd=20038&fsurvival=64"
        b"&sname=sampleteam.LeaderAndDroid 1.0&sscore=14702&sbulletd=7527&ssurvival=11\n"
    )
    rumbles = load_rumbles()
    for body in (melee, team):
        b = parse_upload(body)
        check_upload(b, rumbles[b.game], POLICY, 1795354631029 + 1000)


def _body(**changes: str) -> bytes:
    text = CAPTURED.decode()
    for key, value in changes.items():
        start = text.index(f"&{key}=") + 1 if not text.startswith(f"{key}=") else 0
        end = text.find("&", start)
        end = len(text) - 1 if end == -1 else end
        text = text[:start] + (f"{key}={value}" if value is not None else "") + text[end:]
    return text.replace("&&", "&").encode()


@pytest.mark.parametrize(
    "body, reason",
    [
        (b"", "empty upload"),
        (b"\n", "empty upload"),
        (_body(fscore=None), "missing field: fscore"),
        (b"game=roborumble&version=1\n", "missing fields: client"),
        (_body(fscore="12a"), "fscore must be a non-negative whole number"),
        (_body(sscore="-5"), "sscore must be a non-negative whole number"),
        (_body(fbulletd="1.5"), "fbulletd must be a non-negative whole number"),
        (_body(fscore="99999999999999999999"), "fscore is too large"),
        (_body(fscore="175001"), "fscore is too large"),
        (_body(fsurvival="36"), "fsurvival is too large"),
        (_body(rounds="0"), "rounds must be at least 1"),
        (_body(time="soon"), "time must be a non-negative whole number"),
        (_body(version="2"), "version must be 1"),
        (_body(teams="MAYBE"), "teams must be YES or NOT"),
        (_body(field="800by600"), "field must look like 800x600"),
        (_body(fname="sample.Corners"), "fname must be 'package.Class version'"),
        (_body(fname="sample.Corners  1.0"), "fname must be 'package.Class version'"),
        (_body(sname="Corners 1.0"), "sname must name a class inside a package"),
        (_body(fname="sample.C<script> 1.0"), "fname must be 'package.Class version'"),
        (_body(fname="a." + "x" * 70 + " 1.0"), "fname is longer than 70 characters"),
        (_body(sname="sample.Corners 1.0"), "cannot battle itself"),
        (_body(user=""), "user is empty"),
        (_body(user="x" * 51), "user is longer than 50 characters"),
        (_body(user="Jane&Doe"), "malformed field 'Doe'"),
        (_body(game="robo rumble"), "game must be a rumble name"),
        (CAPTURED.replace(b"&fscore=", b"&fscore=1&fscore="), "field 'fscore' given twice"),
    ],
)
def test_malformed_upload_is_refused_with_its_reason(body, reason):
    with pytest.raises(ProtocolError) as error:
        parse_upload(body)
    assert reason in str(error.value)


@pytest.mark.parametrize(
    "change, reason",
    [
        ({"rounds": "10", "fsurvival": "9", "ssurvival": "1"}, "settings differ from roborumble's: rounds must be 35"),
        ({"field": "1000x1000"}, "field must be 800x600"),
        ({"melee": "YES"}, "melee must be NOT"),
        ({"teams": "YES"}, "teams must be NOT"),
        ({"client": "1.7.3.0"}, "CLIENT NOT SUPPORTED: 1.7.3.0; use one of: 1.9.3.9"),
        ({"game": "myrumble"}, "unknown game 'myrumble'"),
        ({"time": str(NOW - 25 * 3_600_000)}, "more than 24 hours old"),
        ({"time": str(NOW + 2 * 3_600_000)}, "lies in the future"),
    ],
)
def test_upload_that_does_not_fit_its_rumble_is_refused(change, reason):
    battle = parse_upload(_body(**change))
    with pytest.raises(ProtocolError) as error:
        check_upload(battle, load_rumbles().get(battle.game), POLICY, NOW)
    assert reason in str(error.value)


def test_firsts_may_add_up_to_more_than_the_rounds():
    """Captured from the real client: a 35-round battle with 30 + 6 firsts (a round counted for both)."""
    b = parse_upload(_body(fsurvival="30", ssurvival="6"))
    assert (b.first.firsts, b.second.firsts) == (30, 6)


def test_fields_are_the_seventeen_of_the_protocol():
    assert len(FIELDS) == 17
