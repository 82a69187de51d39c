"""The jar check (rumble/ingest/jar_check.py): what the real client checks in a jar, and the bounds
that keep a hostile archive cheap, each refusal with its exact words."""

from __future__ import annotations

import hashlib
import io
import struct
import tracemalloc
import zipfile

import pytest
from jar_support import make_jar

from rumble.ingest.jar_check import JarRefused, Limits, check_jar, names_in, parse_properties

LIMITS = Limits(size=1024 * 1024, files=50, unpacked=1024 * 1024, depth=8)


def _refusal(data: bytes, name: str = "jd.Bot 1.0", team: bool = False, limits: Limits = LIMITS) -> str:
    with pytest.raises(JarRefused) as refused:
        check_jar(data, name, team, limits)
    return str(refused.value)


def _zip(entries: dict[str, bytes | str], method: int = zipfile.ZIP_DEFLATED) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", method) as archive:
        for path, content in entries.items():
            archive.writestr(path, content)
    return buffer.getvalue()


def test_a_proper_robot_jar_passes_with_its_hash_and_sizes():
    data = make_jar("jd.sub.Bot 1.0b-2")
    checked = check_jar(data, "jd.sub.Bot 1.0b-2", False, LIMITS)
    assert (checked.name, checked.kind, checked.sha256, checked.size, checked.files) == (
        "jd.sub.Bot 1.0b-2",
        "robot",
        hashlib.sha256(data).hexdigest(),
        len(data),
        3,
    )
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        assert checked.unpacked == sum(info.file_size for info in archive.infolist())


def test_a_team_jar_is_checked_by_its_team_file():
    data = make_jar("jd.Squad 2.0", team=True)
    assert check_jar(data, "jd.Squad 2.0", True, LIMITS).kind == "team"
    assert _refusal(data, "jd.Squad 2.1", team=True) == (
        "jd/Squad.team names 'jd.Squad 2.0' (team.version), not 'jd.Squad 2.1': the client would refuse this jar"
    )
    assert _refusal(data, "jd.Squad 2.0", team=False) == (
        "the jar has no robot properties file jd/Squad.properties: the client looks for it to check the jar is jd.Squad 2.0"
    )


def test_a_file_that_is_not_a_zip_is_refused():
    assert _refusal(b"this is not a jar at all") == "the file is not a jar (a zip archive)"
    assert _refusal(b"") == "the file is not a jar (a zip archive)"


def test_the_properties_must_name_exactly_the_bot_and_version_entered():
    data = make_jar("jd.Bot 1.0")
    assert _refusal(data, "jd.Bot 1.1") == (
        "jd/Bot.properties names 'jd.Bot 1.0' (robot.classname and robot.version), not 'jd.Bot 1.1': "
        "the client would refuse this jar"
    )
    assert _refusal(data, "jd.Other 1.0") == (
        "the jar has no robot properties file jd/Other.properties: the client looks for it to check the jar is jd.Other 1.0"
    )
    no_version = make_jar("jd.Bot 1.0", descriptor="robot.classname=jd.Bot\n")
    assert _refusal(no_version) == "jd/Bot.properties has no robot.version"
    other_class = make_jar("jd.Bot 1.0", descriptor="robot.classname=jd.Imposter\nrobot.version=1.0\n")
    assert _refusal(other_class).startswith("jd/Bot.properties names 'jd.Imposter 1.0'")


def test_a_name_the_client_would_not_read_is_refused():
    assert _refusal(make_jar("jd.Bot 1.0"), "Bot 1.0") == (
        "the name must name a class inside a package, like 'sample.Walls 1.0' (got 'Bot 1.0')"
    )
    assert _refusal(make_jar("jd.Bot 1.0"), "jd.Bot 1,0").startswith("the name must be 'package.Class version'")


def test_size_and_entry_count_limits():
    data = make_jar("jd.Bot 1.0", files={f"jd/data{i}.txt": "x" for i in range(60)})
    assert _refusal(data) == "the jar has 63 entries; at most 50 are taken"
    small = Limits(size=100, files=50, unpacked=1024 * 1024)
    assert (
        _refusal(make_jar("jd.Bot 1.0"), limits=small)
        == f"the jar is {len(make_jar('jd.Bot 1.0'))} bytes; at most 100 are taken"
    )


def test_a_zip_bomb_is_refused_while_reading_within_the_limit_of_memory():
    """64 MiB of zeros in a jar of about 64 KiB: refused once the uncompressed total passes the
    1 MiB limit, and the check never held more than the limit (traced allocations)."""
    bomb = make_jar("jd.Bot 1.0", files={"jd/zeros.bin": bytes(64 * 1024 * 1024)})
    assert len(bomb) < 100_000
    tracemalloc.start()
    try:
        with pytest.raises(JarRefused) as refused:
            check_jar(bomb, "jd.Bot 1.0", False, LIMITS)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert str(refused.value) == ("the jar expands past 1048576 bytes (at jd/zeros.bin); at most 1048576 are taken")
    assert peak < LIMITS.unpacked


def _with_declared_size(data: bytes, path: str, size: int) -> bytes:
    """``data`` with the uncompressed size its local and central headers declare for ``path`` set to ``size``."""
    out = bytearray(data)
    name = path.encode()
    at = out.find(b"PK\x03\x04")
    while at != -1:
        length = struct.unpack_from("<H", out, at + 26)[0]
        if out[at + 30 : at + 30 + length] == name:
            struct.pack_into("<I", out, at + 22, size)
        at = out.find(b"PK\x03\x04", at + 4)
    at = out.find(b"PK\x01\x02")
    while at != -1:
        length = struct.unpack_from("<H", out, at + 28)[0]
        if out[at + 46 : at + 46 + length] == name:
            struct.pack_into("<I", out, at + 24, size)
        at = out.find(b"PK\x01\x02", at + 4)
    return bytes(out)


def test_headers_that_understate_the_size_are_not_trusted():
    """A bomb whose headers say 10 bytes: what comes out is counted (or the CRC fails): refused."""
    bomb = _with_declared_size(
        make_jar("jd.Bot 1.0", files={"jd/zeros.bin": bytes(8 * 1024 * 1024)}), "jd/zeros.bin", 10
    )
    assert _refusal(bomb) == "the jar's entry jd/zeros.bin cannot be read: Bad CRC-32 for file 'jd/zeros.bin'"


def test_headers_that_overstate_the_size_are_not_trusted_either():
    """The client's ZipFile would refuse an entry whose size is not what its header says."""
    data = _with_declared_size(make_jar("jd.Bot 1.0", files={"jd/data.bin": b"12345"}), "jd/data.bin", 2**31)
    assert _refusal(data) == "the jar's entry jd/data.bin cannot be read: its header says 2147483648 bytes, it holds 5"


def test_a_corrupt_entry_is_refused():
    data = bytearray(make_jar("jd.Bot 1.0", files={"jd/data.txt": "abcdefgh" * 100}))
    start = data.find(b"jd/data.txt") + len("jd/data.txt")
    data[start + 5] ^= 0xFF  # a byte of the compressed stream
    assert _refusal(bytes(data)) == "the jar's entry jd/data.txt cannot be read: Bad CRC-32 for file 'jd/data.txt'"


def test_paths_that_leave_the_archive_nest_archives_or_repeat_are_refused():
    base = {"META-INF/MANIFEST.MF": "x", "jd/Bot.properties": "robot.classname=jd.Bot\nrobot.version=1.0\n"}
    assert (
        _refusal(_zip({**base, "../evil.class": "x"}))
        == "the jar's entry '../evil.class' leads out of the archive (..)"
    )
    assert _refusal(_zip({**base, "/etc/passwd": "x"})) == "the jar's entry '/etc/passwd' has an absolute path"
    deep = "/".join(["d"] * 9) + "/x.class"
    assert _refusal(_zip({**base, deep: "x"})) == f"the jar's entry '{deep}' is more than 8 folders deep"
    assert _refusal(_zip({**base, "jd/inner.jar": "x"})) == (
        "the jar holds another archive, 'jd/inner.jar': the client loads no archive inside a jar"
    )
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive, pytest.warns(UserWarning, match="Duplicate name"):
        archive.writestr("jd/Bot.properties", base["jd/Bot.properties"])
        archive.writestr("jd/Bot.properties", "robot.classname=jd.Bot\nrobot.version=6.6\n")
    assert _refusal(buffer.getvalue()) == "the jar holds 'jd/Bot.properties' twice"


def test_an_encrypted_entry_is_refused():
    data = bytearray(make_jar("jd.Bot 1.0"))
    for signature, flags_at in ((b"PK\x03\x04", 6), (b"PK\x01\x02", 8)):  # set the "encrypted" bit everywhere
        at = data.find(signature)
        while at != -1:
            struct.pack_into("<H", data, at + flags_at, struct.unpack_from("<H", data, at + flags_at)[0] | 1)
            at = data.find(signature, at + 4)
    refusal = _refusal(bytes(data))
    assert refusal.startswith("the jar's entry META-INF/MANIFEST.MF cannot be read: File <ZipInfo filename=")
    assert refusal.endswith(" is encrypted, password required for extraction")


def test_names_in_reads_the_bot_a_jar_names():
    assert names_in(make_jar("jd.Bot 1.0"), False, LIMITS) == ["jd.Bot 1.0"]
    assert names_in(make_jar("jd.Squad 3", team=True), True, LIMITS) == ["jd.Squad 3"]
    assert names_in(make_jar("jd.Squad 3", team=True), False, LIMITS) == []


def test_properties_are_read_as_java_reads_them():
    text = (
        "# a comment\n! another\n  robot.classname = jd.Bot\nrobot.version:1.0\\\n    b\n"
        "key\\ with\\ spaces value here\nunicode=\\u00e9t\\u00E9\nempty\ntab\\tkey=v\n"
    )
    assert parse_properties(text) == {
        "robot.classname": "jd.Bot",
        "robot.version": "1.0b",
        "key with spaces": "value here",
        "unicode": "été",
        "empty": "",
        "tab\tkey": "v",
    }
    assert parse_properties("a=1\r\nb=2\rc=3\\\r\n 4\n# x=\\\ny=5") == {"a": "1", "b": "2", "c": "34", "y": "5"}
