"""Parsing and checking an ``UploadedResults`` body (protocol.md section 7).

The client sends ``game=..&version=1&..`` as raw bytes: it is *not* URL-encoded (names carry a
literal space, ``user`` may hold ``+`` or ``%``), so the body is split on ``&`` and the first ``=``
by hand, never with a form decoder. The trailing ``\\n`` or ``\\r\\n`` is stripped.
"""

from __future__ import annotations

from dataclasses import dataclass

from rumble.protocol import ProtocolError
from rumble.protocol.battle import Battle, Side
from rumble.protocol.games import RumbleSettings
from rumble.protocol.names import check_name

FIELDS = (
    "game",
    "version",
    "client",
    "teams",
    "melee",
    "rounds",
    "field",
    "user",
    "time",
    "fname",
    "fscore",
    "fbulletd",
    "fsurvival",
    "sname",
    "sscore",
    "sbulletd",
    "ssurvival",
)
MAX_USER_LENGTH = 50
MAX_ROUNDS = 10_000
# A Robocode robot rarely scores 300 points in a round; a team of five, 2000 at most. Anything
# above this per round is not a real battle (the per-rumble plausibility checks are in rumble/ingest/plausibility.py).
MAX_SCORE_PER_ROUND = 5_000
MAX_DIGITS = 15  # keeps every number far inside SQLite's 64-bit integers


def decode_body(body: bytes) -> str:
    """Decode an upload body: UTF-8, else ISO-8859-1 (a client's locale decides, protocol.md 7.1)."""
    try:
        return body.decode("utf-8")
    except UnicodeDecodeError:
        return body.decode("iso-8859-1")


def split_fields(text: str) -> dict[str, str]:
    """Split ``k=v&k=v`` on ``&`` and on each part's first ``=``, without any decoding."""
    if text.endswith("\r\n"):
        text = text[:-2]
    elif text.endswith("\n"):
        text = text[:-1]
    if not text:
        raise ProtocolError("empty upload")
    fields: dict[str, str] = {}
    for part in text.split("&"):
        key, sep, value = part.partition("=")
        if not sep:
            raise ProtocolError(f"malformed field {part[:40]!r} (no '='); is there an '&' in your user name?")
        if key in fields:
            raise ProtocolError(f"field {key[:20]!r} given twice")
        fields[key] = value
    return fields


def _integer(fields: dict[str, str], key: str, upper: int) -> int:
    value = fields[key]
    if not value.isascii() or not value.isdigit():
        raise ProtocolError(f"{key} must be a non-negative whole number, not {value[:20]!r}")
    if len(value) > MAX_DIGITS or int(value) > upper:
        raise ProtocolError(f"{key} is too large ({value[:20]}; at most {upper})")
    return int(value)


def _flag(fields: dict[str, str], key: str) -> bool:
    value = fields[key]
    if value not in ("YES", "NOT"):
        raise ProtocolError(f"{key} must be YES or NOT, not {value[:20]!r}")
    return value == "YES"


def _user(value: str) -> str:
    value = value.strip()
    if not value:
        raise ProtocolError("user is empty; set USER in your client config")
    if len(value) > MAX_USER_LENGTH:
        raise ProtocolError(f"user is longer than {MAX_USER_LENGTH} characters")
    if any(ord(ch) < 32 or ord(ch) == 127 for ch in value):
        raise ProtocolError("user contains control characters")
    return value


def _field_size(value: str) -> str:
    width, sep, height = value.partition("x")
    if not (
        sep
        and width.isascii()
        and width.isdigit()
        and height.isascii()
        and height.isdigit()
        and len(width) <= 5
        and len(height) <= 5
    ):
        raise ProtocolError(f"field must look like 800x600, not {value[:20]!r}")
    return value


def parse_upload(body: bytes) -> Battle:
    """Parse one upload body into a Battle, or raise ProtocolError with the reason."""
    return battle_from_fields(split_fields(decode_body(body)))


def battle_from_fields(fields: dict[str, str]) -> Battle:
    """Check the 17 protocol fields (as strings) and build the Battle they describe."""
    missing = [key for key in FIELDS if key not in fields]
    if missing:
        raise ProtocolError("missing field" + ("s" if len(missing) > 1 else "") + ": " + ", ".join(missing))
    if fields["version"] != "1":
        raise ProtocolError(f"version must be 1, not {fields['version'][:20]!r}")
    game = fields["game"]
    if not game or len(game) > 40 or not all(ch.isascii() and (ch.isalnum() or ch in "_-") for ch in game):
        raise ProtocolError(f"game must be a rumble name like roborumble, not {game[:40]!r}")
    client = fields["client"]
    if not client or len(client) > 20 or not all(ch.isascii() and (ch.isalnum() or ch in ".-_") for ch in client):
        raise ProtocolError(f"client must be a Robocode version like 1.9.3.9, not {client[:20]!r}")
    rounds = _integer(fields, "rounds", MAX_ROUNDS)
    if rounds < 1:
        raise ProtocolError("rounds must be at least 1")
    max_score = MAX_SCORE_PER_ROUND * rounds
    sides = []
    for prefix, label in (("f", "fname"), ("s", "sname")):
        sides.append(
            Side(
                name=check_name(fields[label], label),
                score=_integer(fields, prefix + "score", max_score),
                bullet_damage=_integer(fields, prefix + "bulletd", max_score),
                firsts=_integer(fields, prefix + "survival", rounds),
            )
        )
    first, second = sides
    if first.name == second.name:
        raise ProtocolError(f"{first.name} cannot battle itself")
    # Each side's firsts are checked on their own (_integer above): Robocode may count one round as
    # a first for both robots (both die at once), so the two may add up to more than the rounds.
    return Battle(
        game=game,
        version=fields["version"],
        client=client,
        teams=_flag(fields, "teams"),
        melee=_flag(fields, "melee"),
        rounds=rounds,
        field=_field_size(fields["field"]),
        uploader=_user(fields["user"]),
        time_ms=_integer(fields, "time", 10**15),
        first=first,
        second=second,
    )


@dataclass(frozen=True)
class Policy:
    """What the server accepts beyond well-formedness (from the settings)."""

    accepted_clients: tuple[str, ...]
    max_age_ms: int
    max_skew_ms: int


def check_upload(battle: Battle, rumble: RumbleSettings | None, policy: Policy, now_ms: int) -> None:
    """Raise ProtocolError unless ``battle`` comes from an accepted client, fits its rumble and is recent."""
    if battle.client not in policy.accepted_clients:
        raise ProtocolError(f"CLIENT NOT SUPPORTED: {battle.client}; use one of: {', '.join(policy.accepted_clients)}")
    check_settings(battle, rumble)
    if battle.time_ms < now_ms - policy.max_age_ms:
        raise ProtocolError(f"your uploaded data is more than {policy.max_age_ms / 3_600_000:g} hours old")
    if battle.time_ms > now_ms + policy.max_skew_ms:
        raise ProtocolError("battle time lies in the future; check your computer's clock")


def check_settings(battle: Battle, rumble: RumbleSettings | None) -> None:
    """Raise ProtocolError unless ``battle`` was fought with its rumble's settings."""
    if rumble is None:
        raise ProtocolError(f"unknown game {battle.game!r}; this server runs no such rumble")
    mismatches = []
    if battle.rounds != rumble.rounds:
        mismatches.append(f"rounds must be {rumble.rounds}")
    if battle.field != rumble.field:
        mismatches.append(f"field must be {rumble.field}")
    if battle.melee != rumble.melee:
        mismatches.append("melee must be " + ("YES" if rumble.melee else "NOT"))
    if battle.teams != rumble.teams:
        mismatches.append("teams must be " + ("YES" if rumble.teams else "NOT"))
    if mismatches:
        raise ProtocolError(f"settings differ from {rumble.name}'s: " + ", ".join(mismatches))


def format_upload(battle: Battle, newline: str = "\n") -> bytes:
    """The body the real client would send for ``battle`` (the inverse of ``parse_upload``)."""
    yes = {True: "YES", False: "NOT"}
    values = (
        battle.game,
        battle.version,
        battle.client,
        yes[battle.teams],
        yes[battle.melee],
        battle.rounds,
        battle.field,
        battle.uploader,
        battle.time_ms,
        battle.first.name,
        battle.first.score,
        battle.first.bullet_damage,
        battle.first.firsts,
        battle.second.name,
        battle.second.score,
        battle.second.bullet_damage,
        battle.second.firsts,
    )
    return ("&".join(f"{key}={value}" for key, value in zip(FIELDS, values)) + newline).encode("utf-8")
