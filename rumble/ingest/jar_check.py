"""A bot jar checked before rumble lists it, pure: what the real client's jar check wants
(protocol.md section 4), and bounds that keep a hostile archive from costing the server more than
a few megabytes.

The client takes a downloaded jar only if it holds ``<package path>/<Class>.properties`` whose
``robot.classname`` + space + ``robot.version`` is the participant's name (a team rumble:
``<package path>/<Team>.team`` whose ``team.version`` is the participant's version). rumble checks
the same, on the jar as entered, so that a listed jar is never refused by the clients.

The archive is read with Python's ``zipfile``, every entry in full, in chunks: the uncompressed
total counted is what came out of the decompressor, never what the headers declare, and reading
stops as soon as it passes ``Limits.unpacked``, so a small jar that expands to gigabytes costs one
chunk past the limit. Reading every entry also checks every CRC: a corrupt jar is refused here,
not by each client. Codesize stays the client's business.
"""

from __future__ import annotations

import hashlib
import io
import re
import zipfile
import zlib
from dataclasses import dataclass

from rumble.protocol import ProtocolError
from rumble.protocol.names import check_name, split_name

CHUNK = 64 * 1024  # bytes asked of the decompressor at once
DESCRIPTOR_BYTES = 64 * 1024  # a .properties or .team file larger than this is not a bot's
NESTED_ARCHIVES = (".jar", ".zip")  # the client loads no archive inside the jar


class JarRefused(ValueError):
    """The jar cannot be listed; the message says why, in words for the competitor."""


@dataclass(frozen=True)
class Limits:
    """What one jar may be: its size, its entries, its size once uncompressed, its folder depth."""

    size: int
    files: int
    unpacked: int
    depth: int = 32


@dataclass(frozen=True)
class CheckedJar:
    """A jar that passed: the bot it is, and what it is made of."""

    name: str  # "package.Class version"
    kind: str  # "robot" or "team"
    sha256: str
    size: int
    files: int
    unpacked: int


def descriptor_path(name: str, team: bool) -> str:
    """The archive path of the file the client reads the name from: ``pkg/sub/Class.properties``
    (``.team`` in a team rumble)."""
    package, class_name, _ = split_name(name)
    return f"{package.replace('.', '/')}/{class_name}.{'team' if team else 'properties'}"


def check_jar(data: bytes, name: str, team: bool, limits: Limits) -> CheckedJar:
    """``data`` as a jar of the bot ``name`` ("package.Class version"), for a team rumble if
    ``team``; JarRefused saying why it is not."""
    try:
        check_name(name, "the name")
    except ProtocolError as error:
        raise JarRefused(f"{error} (got {name[:80]!r})") from None
    files, unpacked, descriptors = _read_all(data, limits)
    wanted = descriptor_path(name, team)
    if wanted not in descriptors:
        what = "team file" if team else "robot properties file"
        raise JarRefused(f"the jar has no {what} {wanted}: the client looks for it to check the jar is {name}")
    found = _named(wanted, descriptors[wanted], team)
    if found != name:
        key = "team.version" if team else "robot.classname and robot.version"
        raise JarRefused(f"{wanted} names {found!r} ({key}), not {name!r}: the client would refuse this jar")
    return CheckedJar(
        name=name,
        kind="team" if team else "robot",
        sha256=hashlib.sha256(data).hexdigest(),
        size=len(data),
        files=files,
        unpacked=unpacked,
    )


def names_in(data: bytes, team: bool, limits: Limits) -> list[str]:
    """The bots the jar names (each of its ``.properties`` with both keys, or each ``.team`` with
    a version, at the path the name gives), sorted: what a command entering jars by the file takes
    as the name when the jar names one. JarRefused for an archive ``check_jar`` would refuse anyway."""
    _, _, descriptors = _read_all(data, limits)
    suffix = ".team" if team else ".properties"
    found = set()
    for path, text in descriptors.items():
        if not path.endswith(suffix):
            continue
        try:
            name = _named(path, text, team)
            check_name(name, "name")
        except (JarRefused, ProtocolError):
            continue
        if descriptor_path(name, team) == path:
            found.add(name)
    return sorted(found)


def _named(path: str, text: str, team: bool) -> str:
    """The name a descriptor file gives: ``robot.classname robot.version``, or for a team its
    class (from the path) and ``team.version``."""
    values = parse_properties(text)
    if team:
        class_path = path[: -len(".team")].replace("/", ".")
        version = values.get("team.version")
        if version is None:
            raise JarRefused(f"{path} has no team.version")
        return f"{class_path} {version}"
    class_name, version = values.get("robot.classname"), values.get("robot.version")
    if class_name is None or version is None:
        missing = " and ".join(k for k, v in (("robot.classname", class_name), ("robot.version", version)) if v is None)
        raise JarRefused(f"{path} has no {missing}")
    return f"{class_name} {version}"


def _read_all(data: bytes, limits: Limits) -> tuple[int, int, dict[str, str]]:
    """Read every entry of the archive within ``limits``: (entries, bytes uncompressed, the text of
    each .properties and .team file). JarRefused for anything the limits or the format refuse."""
    if len(data) > limits.size:
        raise JarRefused(f"the jar is {len(data)} bytes; at most {limits.size} are taken")
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
    except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, ValueError, EOFError):
        raise JarRefused("the file is not a jar (a zip archive)") from None
    with archive:
        infos = archive.infolist()
        if len(infos) > limits.files:
            raise JarRefused(f"the jar has {len(infos)} entries; at most {limits.files} are taken")
        seen: set[str] = set()
        descriptors: dict[str, str] = {}
        unpacked = 0
        for info in infos:
            _check_path(info.filename, limits.depth, seen)
            keep = info.filename.endswith((".properties", ".team"))
            before = unpacked
            kept = bytearray()
            try:
                with archive.open(info) as entry:
                    while chunk := entry.read(CHUNK):
                        unpacked += len(chunk)
                        if unpacked > limits.unpacked:
                            raise JarRefused(
                                f"the jar expands past {limits.unpacked} bytes (at {info.filename}); "
                                f"at most {limits.unpacked} are taken"
                            )
                        if keep:
                            kept += chunk
                            if len(kept) > DESCRIPTOR_BYTES:
                                raise JarRefused(f"{info.filename} is larger than {DESCRIPTOR_BYTES} bytes")
            except JarRefused:
                raise
            except (zipfile.BadZipFile, zlib.error, EOFError, OSError, ValueError, NotImplementedError) as error:
                raise JarRefused(f"the jar's entry {info.filename} cannot be read: {error}") from None
            except RuntimeError as error:  # zipfile's word for an encrypted entry
                raise JarRefused(f"the jar's entry {info.filename} cannot be read: {error}") from None
            if unpacked - before != info.file_size:  # Java's ZipFile refuses such an entry ("invalid entry size")
                raise JarRefused(
                    f"the jar's entry {info.filename} cannot be read: its header says {info.file_size} bytes, "
                    f"it holds {unpacked - before}"
                )
            if keep:
                descriptors[info.filename] = bytes(kept).decode("latin-1")  # java.util.Properties reads ISO-8859-1
    return len(infos), unpacked, descriptors


def _check_path(path: str, depth: int, seen: set[str]) -> None:
    """An entry's name: relative, without ``..``, at most ``depth`` folders deep, not an archive,
    and not a second entry of the same name (which one would a client read?)."""
    shown = path[:120]
    if path.startswith(("/", "\\")) or (len(path) > 1 and path[1] == ":"):
        raise JarRefused(f"the jar's entry {shown!r} has an absolute path")
    parts = path.replace("\\", "/").split("/")
    if ".." in parts:
        raise JarRefused(f"the jar's entry {shown!r} leads out of the archive (..)")
    if len([p for p in parts if p]) > depth:
        raise JarRefused(f"the jar's entry {shown!r} is more than {depth} folders deep")
    if path.lower().endswith(NESTED_ARCHIVES):
        raise JarRefused(f"the jar holds another archive, {shown!r}: the client loads no archive inside a jar")
    if path in seen:
        raise JarRefused(f"the jar holds {shown!r} twice")
    seen.add(path)


_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}
_HEX4 = re.compile(r"[0-9A-Fa-f]{4}")


def parse_properties(text: str) -> dict[str, str]:
    """The keys and values of a ``java.util.Properties`` file (as ``Properties.load`` reads it):
    ``#`` and ``!`` comments, ``key=value``, ``key: value`` or ``key value``, a backslash at the
    end of a line continuing it, and ``\\t``, ``\\n``, ``\\uXXXX`` escapes. A later key wins."""
    values: dict[str, str] = {}
    for line in _logical_lines(text):
        stripped = line.lstrip(" \t\f")
        if not stripped or stripped[0] in "#!":
            continue
        key, rest = _split_key(stripped)
        values[_unescape(key)] = _unescape(rest)
    return values


def _logical_lines(text: str) -> list[str]:
    """Natural lines joined where one ends in an odd number of backslashes (the continuation's
    leading white space dropped), comment lines never continued."""
    natural = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    lines: list[str] = []
    pending: str | None = None
    for raw in natural:
        line = raw if pending is None else pending + raw.lstrip(" \t\f")
        if pending is None and line.lstrip(" \t\f")[:1] in ("#", "!"):
            lines.append(line)
            continue
        trailing = len(line) - len(line.rstrip("\\"))
        if trailing % 2 == 1:
            pending = line[:-1]
            continue
        pending = None
        lines.append(line)
    if pending is not None:
        lines.append(pending)
    return lines


def _split_key(line: str) -> tuple[str, str]:
    """(key, value) of a logical line: the key ends at the first unescaped ``=``, ``:`` or white
    space; then white space, one ``=`` or ``:`` and white space again are skipped."""
    i = 0
    while i < len(line):
        ch = line[i]
        if ch == "\\":
            i += 2
            continue
        if ch in "=: \t\f":
            break
        i += 1
    key, rest = line[:i], line[i:]
    rest = rest.lstrip(" \t\f")
    if rest[:1] in ("=", ":"):
        rest = rest[1:].lstrip(" \t\f")
    return key, rest


def _unescape(text: str) -> str:
    if "\\" not in text:
        return text
    out = []
    i = 0
    while i < len(text):
        ch = text[i]
        if ch != "\\" or i + 1 >= len(text):
            out.append(ch)
            i += 1
            continue
        nxt = text[i + 1]
        if nxt == "u" and i + 6 <= len(text):
            digits = text[i + 2 : i + 6]
            if _HEX4.fullmatch(digits):
                out.append(chr(int(digits, 16)))
                i += 6
                continue
        out.append(_ESCAPES.get(nxt, nxt))
        i += 2
    return "".join(out)
