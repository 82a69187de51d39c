"""Rumbles and their settings, read from a TOML file (``rumble/rumbles.toml`` by default)."""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path

DEFAULT_RUMBLES_FILE = Path(__file__).resolve().parent.parent / "rumbles.toml"
DIVISIONS = ("general", "mini", "micro", "nano")
# Codesize limits of the client's divisions (protocol.md section 7.2): strictly below these.
CODESIZE_LIMITS = {"general": None, "mini": 1500, "micro": 750, "nano": 250}
# What a battle's percentage is computed from: the total scores (every rumble but twinduel), or the
# rounds each side won (twinduel, as RRServer scores it: peers.md section 2).
SCORINGS = ("score", "survival")


@dataclass(frozen=True)
class RumbleSettings:
    name: str
    rounds: int
    field: str
    melee: bool
    teams: bool
    division: str = "general"
    family: str = ""
    scoring: str = "score"  # what a battle's share is taken from: "score", or "survival" (rounds won)

    @property
    def kind(self) -> str:
        """ "melee", "team" or "1v1"."""
        return "melee" if self.melee else "team" if self.teams else "1v1"


class ConfigError(ValueError):
    """The rumbles file is not usable; the message says which entry and why."""


def field_size(value: object, where: str) -> str:
    """A battlefield size 'WIDTHxHEIGHT' in pixels (ASCII digits, at most 5 each, neither 0), else ConfigError."""
    if not isinstance(value, str):
        raise ConfigError(f"{where}: field must be a string like '800x600'")
    width, sep, height = value.partition("x")
    if not (
        sep and all(side.isascii() and side.isdigit() and len(side) <= 5 and int(side) > 0 for side in (width, height))
    ):
        raise ConfigError(f"{where}: field must look like '800x600', not {value[:20]!r}")
    return value


def parse_rumbles(text: str, source: str = "rumbles file") -> dict[str, RumbleSettings]:
    """Parse the TOML text of a rumbles file into settings keyed by game name."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise ConfigError(f"{source}: {error}") from None
    rumbles = {}
    for name, entry in data.items():
        where = f"{source} [{name}]"
        if not isinstance(entry, dict):
            raise ConfigError(f"{where}: expected a table")
        unknown = set(entry) - {"rounds", "field", "melee", "teams", "division", "family", "scoring"}
        if unknown:
            raise ConfigError(f"{where}: unknown keys {sorted(unknown)}")
        rounds = entry.get("rounds")
        if not isinstance(rounds, int) or isinstance(rounds, bool) or rounds < 1:
            raise ConfigError(f"{where}: rounds must be a positive integer")
        melee, teams = entry.get("melee", False), entry.get("teams", False)
        if not isinstance(melee, bool) or not isinstance(teams, bool):
            raise ConfigError(f"{where}: melee and teams must be true or false")
        division = entry.get("division", "general")
        if division not in DIVISIONS:
            raise ConfigError(f"{where}: division must be one of {', '.join(DIVISIONS)}")
        scoring = entry.get("scoring", "score")
        if scoring not in SCORINGS:
            raise ConfigError(f"{where}: scoring must be one of {', '.join(SCORINGS)}")
        rumbles[name] = RumbleSettings(
            name=name,
            rounds=rounds,
            field=field_size(entry.get("field"), where),
            melee=melee,
            teams=teams,
            division=division,
            family=str(entry.get("family", name)),
            scoring=scoring,
        )
    return rumbles


def load_rumbles(path: str | Path | None = None) -> dict[str, RumbleSettings]:
    """Read the rumbles file at ``path`` (the shipped stock rumbles when None)."""
    path = Path(path) if path else DEFAULT_RUMBLES_FILE
    return parse_rumbles(path.read_text(encoding="utf-8"), source=str(path))
