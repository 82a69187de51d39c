"""Bot jars for the tests, built with zipfile: a robot's (``pkg/Bot.properties`` with
``robot.classname`` and ``robot.version``) or a team's (``pkg/Team.team`` with ``team.version``),
as the real client's jar check wants them (protocol.md section 4)."""

from __future__ import annotations

import io
import re
import zipfile

ZIP_EPOCH = (1980, 1, 1, 0, 0, 0)  # the earliest time a zip entry can state: a constant, not a clock


def make_jar(
    name: str, team: bool = False, files: dict[str, bytes | str] | None = None, descriptor: str | None = None
) -> bytes:
    """A jar of ``name`` ("pkg.Bot 1.0"): a class file, and the descriptor the client reads (its
    text ``descriptor`` if given), plus ``files``; the same arguments give the same bytes."""
    class_path, version = name.split(" ", 1)
    folder = class_path.replace(".", "/")
    if descriptor is None:
        if team:
            descriptor = f"team.members={class_path}Member\nteam.version={version}\n"
        else:
            descriptor = f"robot.classname={class_path}\nrobot.version={version}\nrobot.author.name=Tester\n"
    entries = {
        "META-INF/MANIFEST.MF": f"Manifest-Version: 1.0\nrobots: {class_path}\n\n",
        f"{folder}.class": b"\xca\xfe\xba\xbe" + class_path.encode() * 8,
        f"{folder}.{'team' if team else 'properties'}": descriptor,
        **(files or {}),
    }
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for path, content in entries.items():
            # The zip format's earliest time for every entry: the same name gives the same bytes (and hash) on every call.
            archive.writestr(zipfile.ZipInfo(path, date_time=ZIP_EPOCH), content, zipfile.ZIP_DEFLATED)
    return buffer.getvalue()


# The client's own participants-list rule (protocol.md section 3): name, one space, version; a link starting with http.
CLIENT_LINE = re.compile(r"[\w\.]+[ ][\w\.-]+")


def client_reads(text: str) -> list[tuple[str, str]]:
    """The entries the real client takes from a participants list: the lines strictly between a
    line containing <pre> and one containing </pre>, each split on ',' into exactly two parts."""
    found, inside = [], False
    for line in re.split(r"\r\n|\r|\n", text):
        if "</pre>" in line:
            inside = False
        elif "<pre>" in line:
            inside = True
        elif inside and line.strip():
            parts = line.split(",")
            assert len(parts) == 2 and CLIENT_LINE.fullmatch(parts[0].strip()), line
            assert parts[1].strip().startswith("http"), line
            found.append((parts[0].strip(), parts[1].strip()))
    return found
